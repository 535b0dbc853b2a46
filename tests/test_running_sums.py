"""Running sums are the same bits whichever way they are added: numpy's accumulate or one np.add per step.

The recorder picks numpy's ``add.accumulate`` for small rows (little
overhead per call: lesson kvcache records 510 steps) and an ``np.add`` per
step for large ones (numpy's accumulate along a leading axis of a T = 512
score table doubled the whole trace's time).  The reference here is one
``torch`` addition per step, the pipeline's own arithmetic.  Both must do exactly the
left-to-right IEEE additions of the dtype, so which one ran never shows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tracer.record import recorder


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(1, 3), (7, 5), (64, 70), (5, 9000)])
def test_both_ways_give_the_left_to_right_sums_bit_for_bit(
    dtype: torch.dtype, shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    g = torch.Generator().manual_seed(sum(shape))
    terms = (torch.randn(shape, generator=g, dtype=torch.float64) * 10 ** torch.randint(-6, 6, shape, generator=g)).to(
        dtype
    )
    want = torch.empty_like(terms)
    acc = terms[0].clone()
    want[0] = acc
    for n in range(1, shape[0]):
        acc = acc + terms[n]  # one IEEE addition in the dtype
        want[n] = acc
    for small_rows in (0, 10**9):  # every row "large" (the np.add loop), every row "small" (numpy)
        monkeypatch.setattr(recorder, "SMALL_ROWS", small_rows)
        got = recorder.running_sums(terms)
        assert got.dtype == dtype and np.array_equal(got.numpy().view(np.uint8), want.numpy().view(np.uint8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_infinities_nans_and_a_moved_axis_give_the_same_bits(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Terms read through a moved axis (the recorder sums the scores' products over k that way), with inf, -inf, NaN."""
    g = torch.Generator().manual_seed(11)
    base = torch.randn((6, 70, 9), generator=g, dtype=dtype)
    base[1, 3, 2], base[2, 3, 2], base[4, 5, 1], base[0, 7, 0] = math.inf, -math.inf, math.nan, -math.inf
    terms = base.movedim(2, 0)  # not contiguous: the summed axis is the innermost one in memory
    want = torch.empty_like(terms)
    acc = terms[0].clone()
    want[0] = acc
    for n in range(1, terms.shape[0]):
        acc = acc + terms[n]
        want[n] = acc
    for small_rows in (0, 10**9):
        monkeypatch.setattr(recorder, "SMALL_ROWS", small_rows)
        got = recorder.running_sums(terms)
        assert got.shape == want.shape
        assert got.contiguous().numpy().tobytes() == want.contiguous().numpy().tobytes()
