"""Lesson ``simple``: self-attention without trainable weights, the tutorial's lesson.

It has no options of its own: everything it shows follows from the inputs.
Its page is the walk-through of :mod:`.page` (with its figures,
:func:`tracer.plot.walkthrough_figures`), which shows the overflow
beside the softmax it motivates, although the pipeline records it last: its
``order``.  Its reports are the plain ``tutorial`` folders (``folder=""``).
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
    page="tracer.lessons.simple.page:page",
    figures="tracer.plot:walkthrough_figures",
    order=("inputs", "scores", "normalize", "overflow", "context", "matrix"),
    folder="",
    idea="tracer.lessons.simple.idea:idea",
)
