"""Lesson ``rope``: its options, and where its pipeline, narratives and notebook cells live."""

from __future__ import annotations

from dataclasses import dataclass, field

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("rope", **options)``)."""

    weights: str = "rand"
    """The projection weights, as lesson trainable takes them."""

    d_out: int = 4
    """The size of each query and key vector (even: RoPE turns pairs)."""

    base: float = 10000.0
    """The base of the frequencies θ_p = base^(-2(p-1)/d)."""

    offset: int = 100
    """How far both positions are shifted to show that scores depend only on m − n."""

    style: str = field(default="half", metadata={"flag": "--rope-style", "choices": ("half", "interleaved")})
    """How components are paired: ``half`` (x_p with x_p+d/2, as ``rotate_half``) or ``interleaved`` (neighbours)."""


LESSON = PackagedLesson(
    name="rope",
    place=8,
    summary="Rotary position embeddings: queries and keys turned pair by pair by m·θ; scores depend only on m − n.",
    pipeline="tracer.lessons.rope.pipeline",
    package=__name__,
    checker="tracer.lessons.rope.check",
    notebook="tracer.lessons.rope.notebook",
    options=Options,
)
