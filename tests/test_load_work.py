"""Loading a trace recomputes its running sums in memory order: the work is counted, not timed.

A running sum stored as *derived* is recomputed on load, one left-to-right
addition per entry.  Along an axis that is innermost in memory (the scores'
``omega.s`` over ``k``: the products ``omega.p`` are decoded C-ordered, so
``k`` steps one entry at a time) a plane-by-plane loop reads one entry per
cache line and walks the whole T×T×d block once per position of ``k``: at
T=512, d=64 that is 63 passes over 268 MB, twice (``omega.s`` and
``scaled.omega.s``).  :func:`tracer.core.predict.counting` counts the entries
read that way; a load must read none, whatever the machine's speed.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracer
from tracer.core import predict, serialize


def left_to_right(terms: np.ndarray, ax: int) -> np.ndarray:
    """The running sums of ``terms`` along ``ax``, one IEEE addition of the dtype per step."""
    work = np.moveaxis(terms, ax, 0)
    out = np.empty_like(work)
    out[0] = work[0]
    for n in range(1, work.shape[0]):
        out[n] = out[n - 1] + work[n]
    return np.moveaxis(out, 0, ax)


def test_loading_a_trace_reads_no_running_sum_out_of_memory_order() -> None:
    x = np.random.default_rng(3).uniform(-1, 1, (24, 16))
    trace = tracer.trace_self_attention(x, query=1)
    text = serialize.dumps(trace)
    with predict.counting() as tally:
        back = serialize.loads(text)
    assert tally.scattered == 0
    for a, b in zip(trace.nodes, back.nodes, strict=True):
        assert np.ascontiguousarray(a.value).tobytes() == np.ascontiguousarray(b.value).tobytes(), a.name


def test_the_count_sees_a_loop_across_memory() -> None:
    """The guard can fail: a running sum along the innermost axis read plane by plane is counted."""
    terms = np.ones((4, 5, 6), dtype=np.float32)
    with predict.counting() as tally:
        predict._count(np.moveaxis(terms, 2, 0)[1])  # a plane of entries 6 apart
        predict._count(np.moveaxis(terms, 0, 0)[1])  # a contiguous plane
    assert tally.scattered == 4 * 5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
@pytest.mark.parametrize("over", ["i", "j", "k"])
def test_running_sums_are_the_left_to_right_bits_in_every_layout(
    dtype: type[np.floating], order: tuple[int, int, int], over: str
) -> None:
    """Whichever way a sum is computed (numpy's accumulate along memory, or plane by plane), the bits are the same."""
    rng = np.random.default_rng(sum(order))
    shape = (7, 9, 11)
    wide = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 7, shape)
    terms = np.ascontiguousarray(wide.astype(dtype).transpose(order)).transpose(np.argsort(order))
    assert terms.shape == shape
    axes = ("i", "j", "k")
    prev = [a if a != over else f"{a}-1" for a in axes]
    args = [{"node": "s", "index": prev}, {"node": "t", "index": list(axes)}]
    with predict.counting() as tally:
        got = predict.predict("acc", axes, shape, args, {"over": over}, {"t": terms}, np.dtype(dtype))
    assert got is not None
    want = left_to_right(terms, axes.index(over))
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()
    assert tally.scattered == 0
