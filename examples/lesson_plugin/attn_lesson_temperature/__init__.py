"""Lesson ``temperature``: the tutorial's self-attention with its scores divided by a temperature τ.

This module is what the entry point names: it must stay cheap to import
(``attn-trace lessons`` imports it to read the summary), so it only describes
where the lesson's parts live; torch comes in with :mod:`.pipeline`, and the
check's description with :mod:`.check` when code is first checked.  The
package's data files are its narratives (``narrative.<lang>.toml``) and its
own sentences (``messages.<lang>.toml``: what its check says of a mistake).
"""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own option (``attn-trace``'s Python API: ``trace_lesson("temperature", tau=0.5)``)."""

    tau: float = 2.0
    """The temperature the scores are divided by: above 1 flattens the weights, below 1 sharpens them."""


LESSON = PackagedLesson(
    name="temperature",
    summary="Attention with a temperature: the scores divided by tau before the softmax; tau = 1 is the tutorial.",
    pipeline="attn_lesson_temperature.pipeline",
    package=__name__,
    notebook="attn_lesson_temperature.notebook",
    checker="attn_lesson_temperature.check",  # CHECK: what `attn-trace check` asks of a student's code
    options=Options,
)
