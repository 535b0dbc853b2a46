"""Lesson ``kvcache``: its options, and where its pipeline, narratives and notebook cells live."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("kvcache", **options)``)."""

    prompt: int | None = None
    """Tokens fed at once before generating one by one (``None``: 3, or all but the last token of a shorter text)."""

    d_out: int = 2
    """The size of each query, key and value vector."""


LESSON = PackagedLesson(
    name="kvcache",
    place=9,
    summary="KV cache: generation token by token, each step's context row equal to full causal attention bit for bit.",
    pipeline="tracer.lessons.kvcache.pipeline",
    package=__name__,
    checker="tracer.lessons.kvcache.check",
    notebook="tracer.lessons.kvcache.notebook",
    options=Options,
)
