"""Lesson gqa as ``attn-trace check`` sees it.

The student writes grouped-query attention: four query heads reading two key/value groups.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from tracer.compare.check.lessons import Q, Spec, qkv

CHECK = Spec(
    "gqa",
    ("d_in", "d_out", "context_length", "num_heads", "num_kv_groups"),
    (3, 8, 6, 4, 2),
    123,
    3,
    8,
    4,
    True,
    (
        *qkv(""),
        Q("hq", "heads", "hq", True, "h", after=("alpha",)),
        Q("hk", "heads", "hk"),
        Q("hv", "heads", "hv"),
        Q("kh", "heads", "kh", True, "h", after=("alpha",)),
        Q("vh", "heads", "vh", True, "h", after=("z",)),
        Q("omega", "scores", "omega", True, "s"),
        Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
        Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "causal.alpha"),
        Q("z", "context", "z"),
        Q("concat", "merge", "concat", True, "o"),
        Q("out", "output", "out", False, "o"),
        Q("short", "mask", "out", run="short"),
    ),
    short=4,
    causal=True,
)
