"""Lesson ``window``: its options, and where its pipeline, narratives and notebook cells live."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("window", **options)``)."""

    window: int = 3
    """How many keys each query sees: itself and the w - 1 before it."""

    d_out: int = 2
    """The size of each query, key and value vector."""


LESSON = PackagedLesson(
    name="window",
    place=5,
    summary="Sliding-window causal attention: each query sees its last w keys; with w >= T it is the causal lesson.",
    pipeline="tracer.lessons.window.pipeline",
    package=__name__,
    checker="tracer.lessons.window.check",
    notebook="tracer.lessons.window.notebook",
    facts="tracer.lessons.window.facts:facts",
    options=Options,
)
