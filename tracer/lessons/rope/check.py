"""Lesson rope as ``attn-trace check`` sees it.

The student writes causal attention whose queries and keys are turned pair by pair (``style``: the pairing checked).

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from tracer.compare.check.lessons import Q, Spec, qkv

CHECK = Spec(
    "rope",
    ("d_in", "d_out", "context_length"),
    (3, 4, 6),
    123,
    3,
    4,
    1,
    True,
    (
        *qkv(""),
        Q("q_rot", "rope", "rope.q"),
        Q("k_rot", "rope", "rope.k"),
        Q("omega", "scores", "omega", True, "s"),
        Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
        Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "causal.alpha"),
        Q("z", "context", "z"),
        Q("short", "mask", "z", run="short"),
    ),
    short=4,
    style="half",
    causal=True,
    trained=True,
)
