"""The book's classes, written as a student would (tests/book_attention.py), captured and held against the lessons.

For every runner: the output under capture is bit for bit the output without
it; the trace's output node holds it; and every quantity the corresponding
lesson records (weights, projections, scores, masks, softmax weights,
dropout, context vectors, per head) is in the captured trace and agrees with
the lesson's to float32 rounding, and to the 4 decimals the lessons print.
Products inside a projection are the same IEEE multiplications in both, so
they agree exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import tracer
from tests import book_attention as book
from tracer.core.fmt import num

RUNNERS = ("v1", "v2", "masking", "dropout", "causal", "wrapper", "mha")


@pytest.fixture(scope="module")
def captured() -> dict[str, tracer.Trace]:
    return {name: tracer.trace_torch(getattr(book, name)) for name in RUNNERS}


@pytest.fixture(scope="module")
def lessons() -> dict[str, tracer.Trace]:
    return {
        "rand": tracer.trace_lesson("trainable"),
        "linear": tracer.trace_lesson("trainable", weights="linear"),
        "causal": tracer.trace_lesson("causal"),
        "multihead": tracer.trace_lesson("multihead"),
    }


def agree(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Float32 agreement, and the same 4-decimal numbers a lesson prints."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7, err_msg=what)
    printed = [num(float(v), 4) for v in want.ravel()]
    assert [num(float(v), 4) for v in got.ravel()] == printed, what


@pytest.mark.parametrize("name", RUNNERS)
def test_capture_changes_nothing(name: str, captured: dict[str, tracer.Trace]) -> None:
    runner: Callable[[], torch.Tensor] = getattr(book, name)
    plain = runner()
    with tracer.capture() as cap:
        under = runner()
    assert torch.equal(plain, under)
    assert plain.dtype == under.dtype and plain.shape == under.shape
    t = captured[name]
    assert np.array_equal(t.tensor(t.meta["output"]), plain.detach().numpy())
    assert cap.node_of(under) == t.meta["output"]


PAIRS_V = {
    "x": "x",
    "queries": "q",
    "keys": "k",
    "values": "v",
    "attn_scores": "omega",
    "attn_weights.div": "scaled",
    "attn_weights": "torch.alpha",
    "attn_weights.quot": "alpha",
    "context_vec": "z",
}


@pytest.mark.parametrize(("name", "weights"), [("v1", "rand"), ("v2", "linear")])
def test_self_attention_classes_agree_with_lesson_trainable(
    name: str, weights: str, captured: dict[str, tracer.Trace], lessons: dict[str, tracer.Trace]
) -> None:
    t, lesson = captured[name], lessons[weights]
    for mine, theirs in PAIRS_V.items():
        agree(t.tensor(mine), lesson.tensor(theirs), f"{mine} ~ {theirs}")
    for w in ("W_query", "W_key", "W_value"):
        param = t.tensor(w) if name == "v1" else t.tensor(f"{w}.weight").T
        assert np.array_equal(param, lesson.tensor(w)), w
    for mine, theirs in (("queries", "q"), ("keys", "k"), ("values", "v")):
        assert np.array_equal(t.tensor(f"{mine}.p"), lesson.tensor(f"{theirs}.p")), f"{mine}.p"
        assert np.array_equal(t.tensor(f"{mine}.s"), lesson.tensor(f"{theirs}.s")), f"{mine}.s"
    # the book prints query 2's context vector: (0.3061, 0.8210) for v1, (-0.0748, 0.0703) for v2
    z2 = [num(float(v), 4) for v in t["context_vec[2]"].value]
    assert z2 == (["0.3061", "0.8210"] if name == "v1" else ["-0.0748", "0.0703"])


def test_masking_and_dropout_agree_with_lesson_causal(
    captured: dict[str, tracer.Trace], lessons: dict[str, tracer.Trace]
) -> None:
    t, lesson = captured["masking"], lessons["causal"]
    pairs = {
        "attn_scores": "omega",
        "attn_weights": "alpha",
        "mask_simple": "mask.tril",
        "masked_simple": "masked.w",
        "row_sums": "masked.sum",
        "masked_simple_norm": "masked.alpha",
        "mask": "mask.triu",
        "masked": "neg.omega",
        "attn_weights_2.div": "neg.scaled",
        "attn_weights_2": "causal.alpha",
    }
    for mine, theirs in pairs.items():
        agree(t.tensor(mine), lesson.tensor(theirs), f"{mine} ~ {theirs}")
    d = captured["dropout"]
    assert np.array_equal(d.tensor("dropout.keep"), lesson.tensor("dropout.keep"))
    agree(d.tensor("dropout"), lesson.tensor("dropout.alpha"), "dropout")
    assert d.node("dropout.scale").value == 2.0


def test_causal_module_agrees_with_lesson_batch(
    captured: dict[str, tracer.Trace], lessons: dict[str, tracer.Trace]
) -> None:
    t, lesson = captured["causal"], lessons["causal"]
    pairs = {
        "x": "batch.x",
        "queries": "batch.q",
        "keys": "batch.k",
        "values": "batch.v",
        "attn_scores": "batch.omega",
        "attn_scores.masked_fill": "batch.neg.omega",
        "attn_weights.div": "batch.neg.scaled",
        "attn_weights": "batch.causal.alpha",
        "context_vec": "batch.z",
    }
    for mine, theirs in pairs.items():
        agree(t.tensor(mine), lesson.tensor(theirs), f"{mine} ~ {theirs}")
    assert np.array_equal(t.tensor("mask"), lesson.tensor("mask.triu"))


def test_wrapper_agrees_with_lesson_multihead_per_head(
    captured: dict[str, tracer.Trace], lessons: dict[str, tracer.Trace]
) -> None:
    t, lesson = captured["wrapper"], lessons["multihead"]
    pairs = {
        "queries": "q",
        "keys": "k",
        "values": "v",
        "attn_scores": "omega",
        "attn_scores.masked_fill": "neg.omega",
        "attn_weights": "causal.alpha",
        "context_vec": "z",
    }
    for h in range(2):
        for mine, theirs in pairs.items():
            agree(t.tensor(f"heads_{h}.{mine}"), lesson.tensor(f"wrap.{theirs}")[h], f"head {h}: {mine}")
        w = t.tensor(f"heads_{h}.W_query.weight").T
        assert np.array_equal(w, lesson.tensor("wrap.W_query")[h])
    agree(t.tensor("cat"), lesson.tensor("wrap.concat"), "cat")


def test_multihead_class_agrees_with_lesson_split(
    captured: dict[str, tracer.Trace], lessons: dict[str, tracer.Trace]
) -> None:
    t, lesson = captured["mha"], lessons["multihead"]
    heads = (1, 0, 2, 3)  # the lesson puts the head axis first: (h, b, i, ·); the module (b, h, i, ·)
    for mine, theirs in (("queries", "q"), ("keys", "k"), ("values", "v"), ("context_vec.view", "concat")):
        agree(t.tensor(mine), lesson.tensor(f"split.{theirs}"), mine)
    for mine, theirs in (
        ("queries.view.transpose", "hq"),
        ("keys.view.transpose", "hk"),
        ("values.view.transpose", "hv"),
        ("attn_scores", "omega"),
        ("attn_scores.masked_fill", "neg.omega"),
        ("attn_weights", "causal.alpha"),
        ("context_vec.matmul", "z"),
    ):
        agree(t.tensor(mine).transpose(heads), lesson.tensor(f"split.{theirs}"), mine)
    agree(t.tensor("out_proj"), lesson.tensor("split.out"), "out_proj")
    assert np.array_equal(t.tensor("out_proj.bias"), lesson.tensor("split.b_out"))


def test_provenance_passes_through_the_head_split(captured: dict[str, tracer.Trace]) -> None:
    t = captured["mha"]
    # d_out = 2 and 2 heads: head 2's query 3 (its one component) is column 2 of the full-width queries
    step = t["queries.view.transpose[1,2,3,1]"]
    assert step.inputs == ("queries.view[1,3,2,1]",)
    assert t["queries.view[1,3,2,1]"].inputs == ("queries[1,3,2]",)
    assert t["queries[1,3,2]"].inputs == tuple(f"queries[1,3,2].p[{k}]" for k in (1, 2, 3))
    assert step.value == t["queries[1,3,2]"].value
    # and back: the joined heads' column 2 is head 2's component
    assert t["context_vec.view[2,5,2]"].inputs == ("context_vec[2,5,2,1]",)
    assert t["context_vec[2,5,2,1]"].inputs == ("context_vec.matmul[2,2,5,1]",)
