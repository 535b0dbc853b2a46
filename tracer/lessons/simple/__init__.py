"""Lesson ``simple``: self-attention without trainable weights, the tutorial's lesson.

It has no options of its own: everything it shows follows from the inputs.
"""

from __future__ import annotations

from tracer.record.lesson import PackagedLesson

LESSON = PackagedLesson(
    name="simple",
    place=1,
    summary="Self-attention without trainable weights: dot-product scores, four normalizations, context vectors.",
    pipeline="tracer.lessons.simple.pipeline",
    package=__name__,
    checker="tracer.lessons.simple.check",
    notebook="tracer.lessons.simple.notebook",
)
