"""Lesson ``causal``: its options, and where its pipeline, narratives and notebook cells live."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("causal", **options)``)."""

    d_out: int = 2
    """The size of each query, key and value vector."""
    dropout: float = 0.5
    """The dropout rate p of the weights' dropout (0 keeps every weight: the backward pass without dropout)."""


LESSON = PackagedLesson(
    name="causal",
    place=3,
    summary="Causal masks both ways (renormalized and -inf), dropout, and the compact module on a batch.",
    pipeline="tracer.lessons.causal.pipeline",
    package=__name__,
    checker="tracer.lessons.causal.check",
    notebook="tracer.lessons.causal.notebook",
    options=Options,
    idea="tracer.lessons.causal.idea:idea",
)
