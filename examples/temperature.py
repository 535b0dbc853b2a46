"""Attention with a temperature: softmax(omega / tau), written from the traced primitives.

A teacher's own pipeline (see ``docs/pipelines.md``)::

    attn-trace report --pipeline examples/temperature.py:build
    attn-trace trace --pipeline examples/temperature.py:sharp -o sharp.json

``build`` uses tau = 2 (flatter weights), ``sharp`` tau = 0.5 (peakier).
The scores are the tutorial's dot products of the inputs; nothing here is
report code: the generic renderer reads the stages and the ``NARRATIVE``.
"""

from __future__ import annotations

from typing import Any

import torch

from tracer.core.trace import Trace
from tracer.record.blocks.attention import context, scores, stable_softmax
from tracer.record.recorder import Recorder

STAGES = ("inputs", "scores", "normalize", "context")


def trace_with(
    tau: float, inputs: torch.Tensor, tokens: list[str], query: int, dtype: torch.dtype, meta: dict[str, Any]
) -> Trace:
    """The pipeline at temperature ``tau``."""
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
    return rec.trace({**meta, "stages": list(STAGES), "tau": tau})


def build(inputs: torch.Tensor, tokens: list[str], query: int, dtype: torch.dtype, meta: dict[str, Any]) -> Trace:
    """Temperature 2: flatter weights."""
    return trace_with(2.0, inputs, tokens, query, dtype, meta)


def sharp(inputs: torch.Tensor, tokens: list[str], query: int, dtype: torch.dtype, meta: dict[str, Any]) -> Trace:
    """Temperature 0.5: peakier weights."""
    return trace_with(0.5, inputs, tokens, query, dtype, meta)


NARRATIVE = {
    "en": {
        "title": "Attention with a temperature",
        "summary": "The tutorial's self-attention, with the scores divided by a temperature tau before the softmax.",
        "stages": {
            "inputs": {"title": "The inputs", "text": "The token vectors $x^{(i)}$, used as queries, keys and values."},
            "scores": {
                "title": "Scores, cooled by tau",
                "text": "Each score $\\omega_{ij} = x^{(i)} \\cdot x^{(j)}$ is divided by the temperature $\\tau$. "
                "A large $\\tau$ shrinks the differences between scores, a small one enlarges them.",
                "show": ["omega", "cooled"],
                "write": ["cooled"],
            },
            "normalize": {
                "title": "Weights",
                "text": "The softmax of the cooled scores: flatter for $\\tau > 1$, peakier for $\\tau < 1$.",
                "show": ["alpha"],
                "heatmap": ["alpha"],
                "write": ["alpha"],
            },
            "context": {
                "title": "The context vector",
                "text": "$z^{(i)} = \\sum_j \\alpha_{ij} x^{(j)}$, term by term.",
                "write": ["z"],
                "bars": ["z"],
            },
        },
    },
    "zh": {
        "title": "带温度的注意力",
        "summary": "教程中的自注意力，只是在 softmax 之前把分数除以温度 tau。",
        "stages": {
            "inputs": {"title": "输入", "text": "词元向量 $x^{(i)}$，同时用作查询、键和值。"},
            "scores": {
                "title": "用 tau 调温后的分数",
                "text": "每个分数 $\\omega_{ij} = x^{(i)} \\cdot x^{(j)}$ 都除以温度 $\\tau$。"
                "$\\tau$ 大，分数之间的差距变小；$\\tau$ 小，差距变大。",
                "show": ["omega", "cooled"],
                "write": ["cooled"],
            },
            "normalize": {
                "title": "权重",
                "text": "对调温后的分数做 softmax：$\\tau > 1$ 时更平坦，$\\tau < 1$ 时更尖锐。",
                "show": ["alpha"],
                "heatmap": ["alpha"],
                "write": ["alpha"],
            },
            "context": {
                "title": "上下文向量",
                "text": "$z^{(i)} = \\sum_j \\alpha_{ij} x^{(j)}$，逐项写出。",
                "write": ["z"],
                "bars": ["z"],
            },
        },
    },
}
