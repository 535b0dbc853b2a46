"""Lesson ``model``: one head of one layer of a trained model, on the reader's own sentence.

The default model is SmolLM2-135M-Instruct, 4-bit quantized (fetched once,
:mod:`.fetch`); ``model`` names any other Llama-architecture GGUF file or
Hugging Face folder.  This module only describes the lesson: nothing here
imports torch or reads a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracer.record.lesson import PackagedLesson


@dataclass(frozen=True)
class Options:
    """The lesson's own options and their defaults (``trace_lesson("model", **options)``)."""

    text: str = "The capital of France is"
    """The sentence, tokenized by the model's own tokenizer."""

    layer: int = 3
    """The traced layer, counted from 0 (the layers before it are computed, not traced)."""

    head: int = 5
    """The traced query head of that layer, counted from 0."""

    model: str | None = None
    """A GGUF file or a Hugging Face checkpoint folder (not given: SmolLM2-135M-Instruct, Q4_1, fetched once)."""


LESSON = PackagedLesson(
    name="model",
    place=10,
    summary="A real model's attention: one head of SmolLM2-135M on your sentence, every scalar, and its next token.",
    pipeline="tracer.lessons.model.pipeline",
    package=__name__,
    notebook="tracer.lessons.model.notebook",
    options=Options,
    facts="tracer.lessons.model.facts:facts",
    idea="tracer.lessons.model.idea:idea",
)
