"""Lesson ``flash``: its options, and where its pipeline, narratives and notebook cells live."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("flash", **options)``)."""

    block: int = 2
    """How many keys each block of the online softmax holds."""

    d_out: int = 2
    """The size of each query, key and value vector."""


LESSON = PackagedLesson(
    name="flash",
    place=7,
    summary=(
        "FlashAttention's online softmax: blocks of B keys, running max and sum, rescaled output; B = T is one block."
    ),
    pipeline="tracer.lessons.flash.pipeline",
    package=__name__,
    checker="tracer.lessons.flash.check",
    notebook="tracer.lessons.flash.notebook",
    options=Options,
)
