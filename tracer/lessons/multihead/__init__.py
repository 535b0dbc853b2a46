"""Lesson ``multihead``: its options, and where its pipeline, narratives and notebook cells live."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("multihead", **options)``)."""

    d_out: int = 2
    """The size of each head's query, key and value vectors (the lesson has two heads)."""


LESSON = PackagedLesson(
    name="multihead",
    place=4,
    summary="Multi-head attention two ways: a wrapper of causal heads, and projections split into heads.",
    pipeline="tracer.lessons.multihead.pipeline",
    package=__name__,
    checker="tracer.lessons.multihead.check",
    notebook="tracer.lessons.multihead.notebook",
    options=Options,
)
