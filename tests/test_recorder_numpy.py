"""The recorder's products and checks run in numpy: the same bits torch gives, whatever the operands.

A contraction's products (:func:`tracer.record.recorder.products`) and a
check's largest gap (``Recorder.maxabsdiff``) are computed with numpy's
single-threaded elementwise operations, which on a busy machine do not wait
on torch's intra-op threads.  Each is one IEEE operation per entry, so the
reference here, torch's own arithmetic, must agree bit for bit, including
broadcast operands, infinities and NaNs; operands of mixed dtypes still go
through torch, which converts them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from tracer.record import recorder
from tracer.record.recorder import Recorder


def _bits(t: torch.Tensor) -> bytes:
    return t.contiguous().numpy().tobytes()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_products_are_torch_mul_bit_for_bit_with_broadcasting_and_specials(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(3)
    a = (torch.randn(7, 1, 5, generator=g, dtype=torch.float64) * 1e30).to(dtype)
    b = (torch.randn(1, 6, 5, generator=g, dtype=torch.float64) * 1e-30).to(dtype).transpose(0, 1).transpose(0, 1)
    a[0, 0, 0], a[1, 0, 1], b[0, 2, 3] = float("inf"), float("nan"), -0.0
    got = recorder.products(a, b, (7, 6, 5), dtype)
    want = torch.empty(7, 6, 5, dtype=dtype)
    torch.mul(a, b, out=want)
    assert _bits(got) == _bits(want)


def test_products_that_overflow_are_inf_and_warn_nothing() -> None:
    """Huge inputs overflow to inf, which the trace records and notes: numpy must not print a warning of its own."""
    a = torch.full((2, 3), 3.0e38, dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = recorder.products(a, a, (2, 3), torch.float32)
    assert torch.isinf(got).all()


def test_products_of_mixed_dtypes_go_through_torch() -> None:
    a = torch.tensor([[0.1, 0.7]], dtype=torch.float64)
    b = torch.tensor([[3.0], [1.0 / 3]], dtype=torch.float32)
    want = torch.empty(2, 2, dtype=torch.float32)
    torch.mul(a, b, out=want)
    assert _bits(recorder.products(a, b, (2, 2), torch.float32)) == _bits(want)


def test_a_check_measures_the_largest_gap_as_torch_would() -> None:
    rec = Recorder(torch.float32)
    inf, nan = float("inf"), float("nan")
    a = rec.input("a", torch.tensor([1.0, inf, nan, 2.5, -inf]), "i", symbol="a", text="a")
    b = rec.input("b", torch.tensor([1.0, inf, nan, 2.0, 3.0]), "i", symbol="b", text="b")
    c = rec.input("c", torch.tensor([1.0, 0.0, nan, 2.5, -inf]), "i", symbol="c", text="c")
    rec.maxabsdiff("check.ab", a, b, latex="", text="")
    rec.maxabsdiff("check.ac", a, c, latex="", text="")
    rec.maxabsdiff("check.aa", a, a, latex="", text="")
    trace = rec.trace({})
    assert float(trace.node("check.ab").value) == inf  # -inf against 3: an infinite gap
    assert float(trace.node("check.ac").value) == inf
    assert float(trace.node("check.aa").value) == 0.0  # equal infinities and two NaNs agree
    d = rec.input("d", torch.tensor([0.5, nan]), "i", symbol="d", text="d")
    e = rec.input("e", torch.tensor([0.25, 1.0]), "i", symbol="e", text="e")
    rec.maxabsdiff("check.de", d, e, latex="", text="")
    got = rec.trace({}).node("check.de").value
    assert np.isnan(got) and got.dtype == np.float32  # a NaN against a number is no agreement
