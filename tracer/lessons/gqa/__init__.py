"""Lesson ``gqa``: its options, and where its pipeline, narratives and notebook cells live."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("gqa", **options)``)."""

    d_out: int = 8
    """The width of all heads together (divisible by ``heads``)."""

    heads: int = 4
    """The number of query heads."""

    groups: int = 2
    """The number of key/value groups (divides ``heads``; 1 is multi-query attention)."""


LESSON = PackagedLesson(
    name="gqa",
    place=6,
    summary="Grouped-query attention: H query heads share G key/value groups; G = H is multi-head, G = 1 multi-query.",
    pipeline="tracer.lessons.gqa.pipeline",
    package=__name__,
    checker="tracer.lessons.gqa.check",
    notebook="tracer.lessons.gqa.notebook",
    facts="tracer.lessons.gqa.facts:facts",
    options=Options,
)
