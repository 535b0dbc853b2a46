"""Lesson simple as ``attn-trace check`` sees it.

The student writes a function of the inputs, called once on the tutorial's six tokens; it does not scale its scores.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from tracer.compare.check.lessons import FUNCTION, Q, Spec

CHECK = Spec(
    "simple",
    ("inputs",),
    (),
    123,
    3,
    3,
    1,
    False,
    (Q("omega", "scores", "omega"), Q("alpha", "weights", "alpha"), Q("z", "context", "z")),
    driver=FUNCTION,
    scaled=False,
)
