"""Lesson window as ``attn-trace check`` sees it.

The student writes causal attention restricted to the last ``window_size`` keys.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from tracer.compare.check.lessons import Q, Spec, qkv

CHECK = Spec(
    "window",
    ("d_in", "d_out", "context_length", "window_size"),
    (3, 2, 6, 3),
    123,
    3,
    2,
    1,
    True,
    (
        *qkv(""),
        Q("omega", "scores", "omega", True, "s"),
        Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
        Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "window.alpha"),
        Q("z", "context", "z"),
        Q("short", "mask", "z", run="short"),
    ),
    short=4,
)
