"""Lesson ``trainable``: its options, and where its pipeline, narratives and notebook cells live."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("trainable", **options)``)."""

    weights: str = "rand"
    """The projection weights: ``rand`` (seed 123, as the book's ``torch.rand``),
    ``linear`` (seed 789, as ``nn.Linear`` draws them) or a weights file."""

    d_out: int = 2
    """The size of each query, key and value vector."""


LESSON = PackagedLesson(
    name="trainable",
    place=2,
    summary="Self-attention with trainable weights: query, key and value projections, scores scaled by sqrt(d_k).",
    pipeline="tracer.lessons.trainable.pipeline",
    package=__name__,
    checker="tracer.lessons.trainable.check",
    notebook="tracer.lessons.trainable.notebook",
    options=Options,
)
