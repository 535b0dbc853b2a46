"""Lesson kvcache's one-token steps computed all at once (``pipelines/kvbatch.py``): the same trace, less work.

Each test records the lesson both ways, with its values worked out ahead
and one step at a time (``Ahead`` replaced by nothing), and compares every
node: id, operands, formulas, attributes, dtype, shape and every bit.  The
work a generated token costs is counted, not timed: with the values worked
out ahead, one more token adds no running sum, no ``exp`` and no operand
layout, however long the text.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
import torch

import tracer
from tracer.core import exact
from tracer.core.trace import Trace
from tracer.record import layout, recorder
from tracer.record.pipelines import kvbatch, kvcache
from tracer.record.pipelines.kvbatch import Ahead

FIELDS = ("name", "op", "stage", "axes", "split", "args", "latex", "text", "symbol", "granularity", "attrs")


def _both(monkeypatch: pytest.MonkeyPatch, build: Any) -> tuple[Trace, Trace]:
    """The trace ``build()`` makes with the values worked out ahead, and one step at a time."""
    fast = build()

    with monkeypatch.context() as m:
        m.setattr(kvcache, "Ahead", lambda *args: None)
        slow = build()
    return fast, slow


def _same(fast: Trace, slow: Trace) -> None:
    assert [n.name for n in fast.nodes] == [n.name for n in slow.nodes]
    for a, b in zip(fast.nodes, slow.nodes, strict=True):
        for f in FIELDS:
            assert getattr(a, f) == getattr(b, f), (a.name, f)
        assert (a.value.dtype, a.value.shape) == (b.value.dtype, b.value.shape), a.name
        assert a.value.tobytes() == b.value.tobytes(), a.name  # bit for bit, NaN and signed zeros included
    assert fast.meta == slow.meta


def _rand(t: int, d: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(t, d, generator=torch.Generator().manual_seed(seed)) * scale


@pytest.mark.parametrize(
    ("options", "label"),
    [
        ({}, "the tutorial's six tokens"),
        ({"prompt": 1}, "a one-token prompt (step 1 worked out ahead too)"),
        ({"inputs": _rand(40, 5, 3)}, "40 random tokens"),
        ({"inputs": _rand(40, 5, 3), "dtype": "float64"}, "float64"),
        ({"inputs": _rand(24, 4, 5, scale=300.0)}, "large scores: weights that underflow to 0"),
        ({"inputs": torch.zeros(9, 3)}, "all scores 0: ties everywhere"),
        ({"inputs": _rand(30, 3, 7), "d_out": 5, "prompt": 4}, "wider projections, a longer prompt"),
    ],
)
def test_worked_out_ahead_is_the_same_trace_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], label: str
) -> None:
    fast, slow = _both(monkeypatch, lambda: tracer.trace_lesson("kvcache", **options))
    _same(fast, slow)


def test_calls_of_several_tokens_among_one_token_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check's generation (tokens 1-2, 3, 4, then 5-6): only the one-token calls are worked out ahead."""
    x = _rand(8, 3, 11)
    extra = kvcache.prepare(x)

    def build() -> Trace:
        return kvcache.build(
            x, list("abcdefgh"), 2, torch.float32, {}, **extra, spans=[(1, 2), (3, 3), (4, 4), (5, 6), (7, 7), (8, 8)]
        )

    fast, slow = _both(monkeypatch, build)
    _same(fast, slow)


def _work(monkeypatch: pytest.MonkeyPatch, t: int) -> Counter[str]:
    """Running sums, exp entries and operand layouts the lesson makes on ``t`` tokens."""
    seen: Counter[str] = Counter()
    sums, lay_out, exp = recorder.running_sums, layout.lay_out, exact.exp

    def counted_sums(terms: torch.Tensor) -> torch.Tensor:
        seen["running sums"] += 1
        return sums(terms)

    def counted_lay_out(*args: Any) -> torch.Tensor:
        seen["layouts"] += 1
        return lay_out(*args)

    def counted_exp(x: np.ndarray) -> np.ndarray:
        seen["exp calls"] += 1
        return exp(x)

    with monkeypatch.context() as m:
        m.setattr(exact, "exp", counted_exp)
        m.setattr(recorder, "running_sums", counted_sums)
        m.setattr(kvbatch, "running_sums", counted_sums)
        m.setattr(recorder, "lay_out", counted_lay_out)
        with exact.counting() as tally:
            tracer.trace_lesson("kvcache", inputs=_rand(t, 4, 1))
    seen["exp entries"] = tally.entries
    return seen


def test_a_generated_token_adds_no_running_sum_no_exp_and_no_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    short, long = _work(monkeypatch, 20), _work(monkeypatch, 60)
    assert long["running sums"] == short["running sums"]  # the tables' and the prompt's, whatever the length
    assert long["exp calls"] == short["exp calls"]
    assert long["layouts"] == short["layouts"]  # not even its row's maximum lays out an operand
    # exp runs on the entries the steps record, no more: token n reads n keys (the full stage all t x t)
    assert long["exp entries"] - short["exp entries"] == sum(range(21, 61)) + 60 * 60 - 20 * 20


def test_a_row_maximum_has_the_bits_of_the_row_alone() -> None:
    """Zeros of both signs and NaNs, where a reduction's order could show: each row as ``torch.amax`` of it alone."""
    inf, nan = float("inf"), float("nan")
    scaled = torch.tensor(
        [[-0.0, -inf, -inf, -inf], [-0.0, 0.0, -inf, -inf], [0.0, -0.0, -3.0, -inf], [nan, 1.0, -0.0, 2.0]]
    )
    top = kvbatch._row_max(scaled, [0, 1, 2, 3])
    for i in range(4):
        alone = torch.amax(scaled[i : i + 1, : i + 1], dim=-1)
        assert top[i : i + 1].numpy().tobytes() == alone.numpy().tobytes(), i


def test_values_left_unrecorded_are_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    step = Ahead.step
    monkeypatch.setattr(Ahead, "step", lambda self, pre, n: {**step(self, pre, n), f"{pre}nothing": torch.zeros(1)})
    with pytest.raises(RuntimeError, match=r"never recorded: step2\.nothing"):
        tracer.trace_lesson("kvcache")


def test_a_primitive_records_a_value_worked_out_ahead_once() -> None:
    rec = recorder.Recorder(torch.float64)
    x = rec.input("x", torch.tensor([1.0, 2.0]), "i", symbol="x_{<i>}")
    rec.ahead["e"] = torch.tensor([5.0, 6.0], dtype=torch.float64)
    rec.elementwise("exp", "e", [x.all], "i", symbol="e", latex="e", text="exp(x)")
    rec.elementwise("exp", "f", [x.all], "i", symbol="f", latex="f", text="exp(x)")
    t = rec.trace({})
    assert t.node("e").value.tolist() == [5.0, 6.0] and not rec.ahead
    assert np.array_equal(t.node("f").value, np.exp([1.0, 2.0]))
    assert t.node("e").args == t.node("f").args


def test_a_reading_is_planned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    tracer.trace_lesson("kvcache", inputs=_rand(12, 3, 2))
    made = layout.PLANS["made"]
    tracer.trace_lesson("kvcache", inputs=_rand(12, 3, 2))
    assert layout.PLANS["made"] == made
