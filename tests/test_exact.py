"""The correctly rounded exp and the CPU-independent nn.Linear draws: the same bits on every machine."""

from __future__ import annotations

from decimal import Context, Decimal

import numpy as np
import pytest
import torch

from tracer.core import exact
from tracer.record import weights as wts

CTX = Context(prec=80)


def nearest32(x: float) -> np.float32:
    """The float32 nearest e**x, decided with 80 digits (the slow way, as a reference)."""
    return exact._nearest32(CTX.exp(Decimal(x)))


def test_exp32_is_correctly_rounded_on_a_sample() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-104, 89, 3000), rng.normal(0, 2, 3000)]).astype(np.float32)
    got = exact.exp(x)
    assert got.dtype == np.float32
    want = np.array([nearest32(float(v)) for v in x], dtype=np.float32)
    assert np.array_equal(got, want)


def test_exp32_edges() -> None:
    big = np.float32(88.72283172607422)  # the largest float32 whose e**big is below the float32 maximum
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, big, np.nextafter(big, np.float32(100)), -103.97, -200.0, 1e-8])
    x = x.astype(np.float32)
    got = exact.exp(x)
    assert got[0] == 1 and got[1] == 1 and got[2] == np.inf and got[3] == 0 and np.isnan(got[4])
    assert np.isfinite(got[5]) and got[5] == nearest32(float(big))
    assert got[6] == np.inf  # overflows: past the halfway point between the maximum and 2**128
    assert 0 < got[7] < np.finfo(np.float32).tiny  # a subnormal, rounded exactly
    assert got[7] == nearest32(float(np.float32(-103.97)))
    assert got[8] == 0 and got[9] == np.float32(1.0)


def test_exp32_near_a_halfway_point_takes_the_exact_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # with a huge margin every entry is "near" a halfway point, so all go through decimal: same answer
    x = np.linspace(-5, 5, 101, dtype=np.float32)
    fast = exact.exp(x)
    monkeypatch.setattr(exact, "MARGIN", 1.0)
    assert np.array_equal(exact.exp(x), fast)


def test_exp64_is_correctly_rounded() -> None:
    x = np.array([0.5, -1.25, 3.0, 700.0, -745.0, 0.0])
    got = exact.exp(x)
    want = [float(CTX.exp(Decimal(v))) for v in x]
    assert got.tolist() == want


def test_exp_rejects_other_dtypes() -> None:
    with pytest.raises(TypeError):
        exact.exp(np.zeros(2, dtype=np.float16))


@pytest.mark.parametrize(("d_in", "d_out", "bias"), [(3, 2, False), (3, 2, True), (64, 48, True)])
def test_linear_draws_match_nn_linear(d_in: int, d_out: int, bias: bool) -> None:
    torch.manual_seed(123)
    ref = [torch.nn.Linear(d_in, d_out, bias=bias) for _ in range(3)]
    got = wts.linear_layers(d_in, d_out, seed=123, bias=bias)
    # torch computes the draw in float64 on AVX2 and AVX-512 CPUs, in float32 elsewhere: bit for bit on the
    # former, within a float32 unit everywhere
    exact_here = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
    for r, g in zip(ref, got, strict=True):
        pairs = [(r.weight.detach(), g.weight)] + ([(r.bias.detach(), g.bias)] if bias else [])
        for a, b in pairs:
            assert b is not None
            if exact_here:
                assert torch.equal(a, b)
            ulp = torch.finfo(torch.float32).eps * a.abs().clamp(min=1e-3)
            assert bool(((a - b).abs() <= ulp).all())
