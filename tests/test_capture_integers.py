"""Integer tensors (counts, indices, sorted orders) are captured as exact whole numbers, never a failure.

FlexAttention's ``create_block_mask`` pads a boolean mask, counts the kept
entries of each block with ``sum`` (int64), orders the blocks with
``argsort`` and writes indices into an int64 table.  Each step is recorded
as whole numbers stored exactly (in the trace's dtype when it holds them,
else float64), or as a listed opaque step; the trace file loads and
verifies.  An op whose recording fails halfway leaves nothing behind.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tracer
from tests import capture_corpus_loops as loops
from tracer.record.capture import ops
from tracer.record.capture.ops.common import Unsupported


def _round_trip(t: tracer.Trace, tmp_path) -> tracer.Trace:  # type: ignore[no-untyped-def]
    t.save(tmp_path / "t.json")
    back = tracer.load(tmp_path / "t.json")
    result = back.verify()
    assert result.ok, result.summary()
    for a, b in zip(t.nodes, back.nodes, strict=True):
        assert np.array_equal(a.value, b.value, equal_nan=True), a.name
    return back


def test_counts_and_orders_of_a_block_mask_are_whole_numbers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = tracer.trace_torch(loops.counted_blocks)
    assert np.array_equal(t.tensor(t.meta["output"]), loops.counted_blocks().numpy())
    counts = t.node("counts")
    assert counts.op == "sum" and counts.attrs.get("library") == "sum"  # decomposed, not opaque
    assert np.array_equal(counts.value, np.array([[10, 0], [8, 3]], dtype=np.float32))  # 6 rows of 8: rows 7, 8 padding
    assert t.node("visits").op == "sum"
    assert all(n.value.dtype.kind == "f" for n in t.nodes)
    assert set(t.meta["opaque"]) == {"pad", "argsort"}
    _round_trip(t, tmp_path)


def test_integers_past_float32_are_kept_exactly(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def big() -> torch.Tensor:
        ids = torch.tensor([2**25 + 1, 2**25 + 3, 7])  # float32 would round the first two
        return ids.sum(dim=0, keepdim=True) * 2

    t = tracer.trace_torch(big)
    total = t.node(t.meta["output"]).value
    assert total.dtype == np.float64 and int(total[0]) == 2 * (2**26 + 11)
    back = _round_trip(t, tmp_path)
    assert int(back.node(back.meta["output"]).value[0]) == 2 * (2**26 + 11)


def test_an_op_that_fails_halfway_leaves_no_step(monkeypatch: pytest.MonkeyPatch) -> None:
    def half(s, c) -> None:  # type: ignore[no-untyped-def]
        name, _ = s.begin("sum")
        s.bind(c.out, s.rec.apply("sum", name, c.out, [], ("i",)))  # recorded and bound, then it fails
        raise Unsupported("a sum this test does not finish")

    monkeypatch.setitem(ops.HANDLERS, "sum", half)
    t = tracer.trace_torch(lambda: torch.arange(6.0).reshape(2, 3).sum(-1))
    assert [n.op for n in t.nodes] == ["input", "reshape", "opaque"]
    assert t.node(t.meta["output"]).op == "opaque"
    assert t.meta["opaque"] == ["sum"]


def _causal(b, h, q, kv):  # type: ignore[no-untyped-def]
    return q >= kv


def _block_mask():  # type: ignore[no-untyped-def]
    from torch.nn.attention.flex_attention import create_block_mask

    return create_block_mask(_causal, B=None, H=None, Q_LEN=6, KV_LEN=6, device="cpu")


def test_create_block_mask_is_captured_and_verifies(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = tracer.trace_torch(lambda: _block_mask().kv_num_blocks.float())
    assert t.meta["dim"] >= 1
    assert np.array_equal(t.tensor(t.meta["output"]), _block_mask().kv_num_blocks.float().numpy())
    assert any(n.op == "sum" and n.attrs.get("library") == "sum" for n in t.nodes)  # the block counts
    _round_trip(t, tmp_path)


def test_flex_attention_with_a_block_mask_verifies(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from torch.nn.attention.flex_attention import flex_attention

    def flex() -> torch.Tensor:
        torch.manual_seed(0)
        q = torch.randn(1, 2, 6, 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch asks for torch.compile; eager runs on CPU all the same
            return flex_attention(q, q * 0.5, q - 1, block_mask=_block_mask())

    t = tracer.trace_torch(flex)
    assert np.array_equal(t.tensor(t.meta["output"]), flex().numpy())
    assert "flex_attention" in t.meta["opaque"]
    _round_trip(t, tmp_path)
