"""The lesson's computation, recorded step by step with attn-trace's traced primitives.

``build`` is what the lesson runs (``prepare`` first validates its option);
it is also a plain pipeline function, so the same module works without
installing anything::

    attn-trace report --pipeline examples/lesson_plugin/attn_lesson_temperature/pipeline.py:build

(``NARRATIVE`` below is what that ad-hoc route reads; the installed lesson
reads the same files through its package.)
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import torch

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.record.blocks.attention import context, scores, stable_softmax
from tracer.record.recorder import Recorder

STAGES = ("inputs", "scores", "normalize", "context")
TAU = 2.0
"""The default temperature (``Options.tau``)."""


def prepare(values: torch.Tensor, tau: float = TAU) -> dict[str, Any]:
    """Check the option before anything is recorded: a temperature is a finite number above 0."""
    if isinstance(tau, bool) or not isinstance(tau, int | float) or not math.isfinite(tau) or tau <= 0:
        raise InputError(f"must be a finite number above 0, got {tau!r}", arg="tau")
    return {"tau": float(tau)}


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    tau: float = TAU,
) -> Trace:
    """The trace of ``softmax(x xᵀ / τ) x`` on ``inputs``, every product, sum and exponential a step."""
    rec = Recorder(dtype)
    with rec.stage("inputs"):
        x = rec.input("x", inputs, "ik", symbol=r"x^{(<i>)}_{<k>}", text="x(<i>)_<k>")
    with rec.stage("scores"):
        omega = scores(rec, "omega", x, x, (), r"\omega_{<i,j>}")
        t = rec.constant("tau", tau, symbol=r"\tau", text=f"tau = {tau:g}")
        cooled = rec.elementwise(
            "div",
            "cooled",
            [omega("i", "j"), t()],
            ("i", "j"),
            symbol=r"\omega_{<i,j>}/\tau",
            latex=r"\hat\omega_{<i,j>} = \frac{\omega_{<i,j>}}{\tau}",
            text="omega[<i>,<j>] / tau",
        )
    with rec.stage("normalize"):
        alpha = stable_softmax(rec, cooled, r"\hat\omega_{<i,j>}")
    with rec.stage("context"):
        context(rec, "z", alpha, x, ())
    info = {"lesson": "temperature", "tokens": tokens, "query": query, "stages": list(STAGES), "tau": tau}
    return rec.trace({**meta, **info})


def sharp(inputs: torch.Tensor, tokens: list[str], query: int, dtype: torch.dtype, meta: dict[str, Any]) -> Trace:
    """Temperature 0.5, peakier weights: ``diff`` it against :func:`build` to see the root cause found."""
    return build(inputs, tokens, query, dtype, meta, tau=0.5)


NARRATIVE = {
    lang: tomllib.loads((Path(__file__).parent / f"narrative.{lang}.toml").read_text(encoding="utf-8"))
    for lang in ("en", "zh")
}
"""The narratives for the ad-hoc ``--pipeline`` route, read from the files the lesson ships."""
