"""Lesson multihead as ``attn-trace check`` sees it.

The student writes the book's multi-head module (or its wrapper of causal heads), checked with two heads eight wide.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from tracer.compare.check.lessons import Q, Spec, qkv

CHECK = Spec(
    "multihead",
    ("d_in", "d_out", "context_length", "dropout", "num_heads"),
    (3, 8, 6, 0.5, 2),
    123,
    3,
    8,
    2,
    True,
    (
        *qkv("split.", True, "p"),
        *(Q(f"h{n}", "heads", f"split.h{n}", False, "p") for n in ("q", "k", "v")),
        Q("omega", "scores", "split.omega", True, "s"),
        Q("masked", "mask", "split.neg.omega", True, "s"),
        Q("masked_scaled", "scaling", "split.neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "split.causal.alpha"),
        Q("z", "context", "split.z"),
        Q("concat", "merge", "split.concat", True, "o"),
        Q("proj", "output", "split.proj", True, "o"),
        Q("out", "output", "split.out", False, "o"),
        Q("short", "mask", "split.out", run="short"),
    ),
    short=4,
    dropout=0.5,
    causal=True,
    trained=True,
)
