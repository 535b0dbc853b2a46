"""Lesson kvcache's one-token steps worked out at once and filled in (lesson kvcache's ``kvbatch``): the same trace.

Each test records the lesson both ways, with its values worked out ahead
and its steps filled in from one recorded step, and one step at a time by
the primitives (``Ahead`` replaced by nothing), and compares every node:
id, operands, formulas, attributes, dtype, shape and every bit.  The work a
generated token costs is counted, not timed: one more token adds no running
sum, no ``exp``, no operand layout and no call of a primitive, however long
the text.
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
from tracer.lessons.kvcache import kvbatch
from tracer.lessons.kvcache import pipeline as kvcache
from tracer.lessons.kvcache.kvbatch import Ahead
from tracer.record import layout, recorder

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


def _calls(monkeypatch: pytest.MonkeyPatch, t: int) -> tuple[int, int]:
    """Calls of the recorder's primitives, and nodes, in the lesson on ``t`` tokens."""
    calls = Counter[str]()
    for name in ("contract", "elementwise", "apply", "max", "input", "constant", "tensor"):
        method = getattr(recorder.Recorder, name)

        def counted(*args: Any, method: Any = method, name: str = name, **kwargs: Any) -> Any:
            calls[name] += 1
            return method(*args, **kwargs)

        monkeypatch.setattr(recorder.Recorder, name, counted)
    nodes = len(tracer.trace_lesson("kvcache", inputs=_rand(t, 4, 1)).nodes)
    monkeypatch.undo()
    return sum(calls.values()), nodes


def test_a_generated_token_calls_no_primitive(monkeypatch: pytest.MonkeyPatch) -> None:
    (short, n_short), (long, n_long) = _calls(monkeypatch, 20), _calls(monkeypatch, 60)
    assert long == short  # the prompt's step, the one step recorded to fill in the others, the full stage
    assert n_long - n_short == 40 * 29  # and every token still has its step's 29 nodes


def _flip_one_bit(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    e = values["causal.exp"].copy()
    e.view(np.uint32 if e.dtype == np.float32 else np.uint64)[0, 0] ^= 1
    return {**values, "causal.exp": e}


def _other_formula(nodes: list[Any]) -> list[Any]:
    nodes[-1].latex += r"\,"
    return nodes


@pytest.mark.parametrize(
    ("where", "spoil"),
    [((Ahead, "values"), _flip_one_bit), ((kvbatch.Replay, "nodes"), _other_formula)],
    ids=["a value", "a formula"],
)
def test_a_step_that_fills_in_otherwise_is_not_replayed(
    monkeypatch: pytest.MonkeyPatch, where: tuple[type, str], spoil: Any
) -> None:
    """The first one-token step, filled in, is compared with the primitives' own: on any difference, none is."""
    owner, name = where
    method = getattr(owner, name)
    x = _rand(12, 3, 4)
    with monkeypatch.context() as m:
        m.setattr(kvcache, "Ahead", lambda *args: None)
        slow = tracer.trace_lesson("kvcache", inputs=x)
    monkeypatch.setattr(owner, name, lambda self, *args: spoil(method(self, *args)))
    _same(tracer.trace_lesson("kvcache", inputs=x), slow)  # every step recorded by the primitives, nothing spoilt


def test_a_replayed_step_records_only_its_own_nodes() -> None:
    rec = recorder.Recorder()
    rec.input("x", torch.zeros(2), "i", symbol="x")
    with pytest.raises(ValueError, match="only nodes of its own"):
        kvbatch.Replay(rec.nodes)


def test_a_reading_is_planned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    tracer.trace_lesson("kvcache", inputs=_rand(12, 3, 2))
    made = layout.PLANS["made"]
    tracer.trace_lesson("kvcache", inputs=_rand(12, 3, 2))
    assert layout.PLANS["made"] == made
