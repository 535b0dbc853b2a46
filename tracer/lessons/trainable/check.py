"""Lesson trainable as ``attn-trace check`` sees it.

The student writes a module built from ``d_in`` and ``d_out``, called on the six tokens, in eval and in training mode.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from tracer.compare.check.lessons import Q, Spec, qkv

CHECK = Spec(
    "trainable",
    ("d_in", "d_out"),
    (3, 2),
    123,
    3,
    2,
    1,
    False,
    (
        *qkv(""),
        Q("omega", "scores", "omega", True, "s"),
        Q("scaled", "scaling", "scaled", False, "s"),
        Q("alpha", "weights", "alpha"),
        Q("z", "context", "z"),
    ),
    trained=True,
)
