"""A total is the last of its running sums along the summed axis, wherever that axis sits: verify recomputes it.

A contraction lays its running sums out in the axes it is given, which need
not put the summed axis last nor keep the order of the terms' axes (the bias
gradient ``dsplit.b_out.per[b,c]`` sums ``dsplit.out[b,i,c]`` over ``i``, its
running sums laid out ``[b,c,i]``).  Verify, saving and loading read the
total from the running sums in their own axis order.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import tracer
from tests.hostile import seal
from tracer.core import serialize
from tracer.record.recorder import Recorder


def _meta(tokens: int, dtype: str) -> dict:
    """What a trace file must say about itself, for a trace recorded here by hand."""
    return {
        "lesson": "sums",
        "tokens": ["w"] * tokens,
        "query": 1,
        "dtype": dtype,
        "n_tokens": tokens,
        "dim": 4,
        "source": {"kind": "test"},
    }


def _edit(doc: dict, node: str, pos: int, by: float) -> dict:
    spec = next(n for n in doc["nodes"] if n["name"] == node)
    assert spec["value"]["encoding"] == "list"
    spec["value"]["data"][pos] += by
    return doc


def test_the_bias_gradient_per_batch_entry_is_recomputed_and_an_edit_of_it_is_named() -> None:
    t = tracer.trace_lesson("multihead", backward=True)
    assert t.verify().unchecked == ()
    doc = _edit(serialize.to_dict(t), "dsplit.b_out.per", 1, 0.25)  # dsplit.b_out.per[1,2]
    result = serialize.loads(seal(doc)).verify()
    assert result.wrong[0].node == "dsplit.b_out.per" and result.wrong[0].ids == ("dsplit.b_out.per[1,2]",)
    assert "dsplit.b_out.s[1,2]" in result.by_id  # the running sum over the entries that read it, left as it was


def _summed(order: tuple[str, ...], over: str) -> Recorder:
    """``total = Σ_over a[b,i,c]`` with its running sums laid out in ``order`` (``over`` anywhere in it)."""
    rec = Recorder(torch.float32)
    a = rec.input("a", torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 7, "bic", symbol="a")
    rec.contract("total", a("b", "i", "c"), None, order, over, symbol="", latex="", text="")
    return rec


@pytest.mark.parametrize("over", ["b", "i", "c"])
def test_a_total_over_any_axis_in_any_layout_is_checked(over: str) -> None:
    for order in itertools.permutations("bic"):
        t = _summed(order, over).trace(_meta(3, "float32"))
        result = t.verify()
        assert result.ok and result.unchecked == (), (order, over)
        doc = _edit(serialize.to_dict(t), "total", 0, 1.0)
        assert serialize.loads(seal(doc)).verify().wrong[0].node == "total", (order, over)


def test_a_large_total_is_stored_derived_and_read_back_bit_for_bit() -> None:
    rec = Recorder(torch.float64)
    a = rec.input("a", torch.from_numpy(np.random.default_rng(1).normal(size=(30, 40, 50))), "bic", symbol="a")
    rec.contract("total", a("b", "i", "c"), None, ("b", "c", "i"), "i", symbol="", latex="", text="")
    t = rec.trace(_meta(40, "float64"))
    spec = next(n for n in serialize.to_dict(t)["nodes"] if n["name"] == "total")
    assert spec["value"]["encoding"] == "derived" and spec["value"]["patch"] is None
    back = serialize.loads(serialize.dumps(t))
    np.testing.assert_array_equal(back.tensor("total"), t.tensor("total"))
