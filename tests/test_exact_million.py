"""The fast exact ``exp`` against :mod:`decimal` on a million inputs per dtype, and its thresholds.

Every entry :func:`tracer.core.exact.exp` returns must be the float nearest
``e**x``.  The reference here is :mod:`decimal` at 60 digits for every input,
rounded by comparing with the exact halfway points between neighbouring floats
(no float arithmetic decides a side).  The inputs cover the whole useful range
(where the result is neither 0 nor inf), with extra weight on the places where
fast methods go wrong: results near the overflow and underflow thresholds, the
subnormal results, tiny ``|x|`` where ``e**x`` is within an ulp of 1, and the
specials.  The reference work is shared among the machine's cores.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from decimal import Context, Decimal

import numpy as np
import pytest

from tracer.core import dd, exact

pytestmark = pytest.mark.slow

SAMPLES = 1_000_000
CTX = Context(prec=60)
EXACT = Context(prec=2000)


def _nearest(value: Decimal, dtype: np.dtype) -> float:
    """The float of ``dtype`` nearest ``value`` (> 0), by exact comparison with the halfway points."""
    t = dtype.type
    with np.errstate(over="ignore"):
        guess = t(float(value)) if value < EXACT.power(2, 1025) else t(np.inf)
    top = EXACT.power(2, int(np.finfo(dtype).maxexp))

    def half(a: np.floating, b: np.floating) -> Decimal:
        da, db = (top if np.isinf(v) else Decimal(float(v)) for v in (a, b))
        return EXACT.divide(EXACT.add(da, db), 2)

    for _ in range(4):
        up, down = np.nextafter(guess, t(np.inf)), np.nextafter(guess, t(0))
        if np.isfinite(guess) and value > half(guess, up):
            guess = up
        elif guess > 0 and value < half(guess, down):
            guess = down
        else:
            break
    return float(guess)


def _reference(chunk: tuple[np.ndarray, str]) -> np.ndarray:
    """``e**x`` correctly rounded, entry by entry, from 60 digits (the slow, obvious way)."""
    xs, name = chunk
    dtype = np.dtype(name)
    out = np.empty(xs.shape, dtype=dtype)
    for n, v in enumerate(xs.tolist()):
        if v != v or v in (float("inf"), float("-inf")) or v == 0:
            out[n] = np.exp(np.asarray(v, dtype=dtype))  # nan, inf, 0 and 1: exact in every library
        else:
            out[n] = _nearest(CTX.exp(Decimal(v)), dtype)
    return out


def _edges(dtype: type[np.floating]) -> np.ndarray:
    """Thresholds and their neighbours, subnormal results, tiny arguments, specials."""
    over, under = exact.OVER[np.dtype(dtype)], exact.UNDER[np.dtype(dtype)]
    near: list[np.floating] = []
    for point in (over, under, dtype(np.log(np.finfo(dtype).tiny))):
        v = point
        for _ in range(8):
            v = np.nextafter(v, dtype(-np.inf))
        for _ in range(17):
            near.append(v)
            v = np.nextafter(v, dtype(np.inf))
    tiny = [dtype(s * 10.0**e) for s in (1, -1) for e in range(-45 if dtype is np.float32 else -320, 1)]
    special = [dtype(v) for v in (0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0)]
    return np.array(near + tiny + special, dtype=dtype)


def _draws(dtype: type[np.floating], n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    over, under = float(exact.OVER[np.dtype(dtype)]), float(exact.UNDER[np.dtype(dtype)])
    low = float(np.log(np.finfo(dtype).tiny))  # below this the result is subnormal
    parts = [
        rng.uniform(under - 1, over + 1, n // 4),  # the whole range, both thresholds crossed
        rng.normal(0, 4, n // 4),  # where softmax inputs live
        rng.uniform(under - 0.5, low + 0.5, n // 8),  # subnormal results
        rng.uniform(over - 2, over + 0.01, n // 8),  # just below overflow
        np.sign(rng.uniform(-1, 1, n // 4)) * 10.0 ** rng.uniform(-12, 0, n // 4),  # small |x|
    ]
    x = np.concatenate(parts).astype(dtype)
    edges = _edges(dtype)
    return np.concatenate([edges, x[: n - edges.size]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_a_million_inputs_match_decimal(dtype: type[np.floating]) -> None:
    x = _draws(dtype, SAMPLES, seed=2026)
    assert x.size == SAMPLES
    with exact.counting() as tally:
        got = exact.exp(x)
    assert got.dtype == dtype and tally.entries == SAMPLES
    workers = os.cpu_count() or 1
    chunks = [(c, np.dtype(dtype).name) for c in np.array_split(x, workers * 4)]
    # spawned, not forked: the test process may hold torch's thread pools
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        want = np.concatenate(list(pool.map(_reference, chunks)))
    bits = np.uint32 if dtype is np.float32 else np.uint64
    same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, [(repr(x[i]), repr(got[i]), repr(want[i])) for i in bad[:5]]
    # the sample reaches what it claims to: overflow, zero, subnormal and normal results
    assert np.isinf(got).any() and (got == 0).any()
    assert ((got > 0) & (got < np.finfo(dtype).tiny)).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_thresholds_are_the_last_floats_before_the_rounding_changes(dtype: type[np.floating]) -> None:
    info = np.finfo(dtype)
    top = EXACT.add(Decimal(float(info.max)), EXACT.power(2, info.maxexp - info.nmant - 2))
    bottom = EXACT.power(2, info.minexp - info.nmant - 1)
    over, under = exact.OVER[np.dtype(dtype)], exact.UNDER[np.dtype(dtype)]
    assert CTX.exp(Decimal(float(over))) > top > CTX.exp(Decimal(float(np.nextafter(over, dtype(0)))))
    assert CTX.exp(Decimal(float(under))) < bottom < CTX.exp(Decimal(float(np.nextafter(under, dtype(0)))))
    below = np.array([np.nextafter(over, dtype(0)), np.nextafter(under, dtype(0))], dtype=dtype)
    got = exact.exp(below)
    # just below OVER the result is finite (a few hundred units below the largest float: consecutive
    # arguments are that far apart in e**x); just above UNDER it is the least subnormal, not 0
    assert np.isfinite(got[0]) and got[0] > info.max / 2
    assert got[1] == np.nextafter(dtype(0), dtype(1))
    assert exact.exp(np.array([over, under], dtype=dtype)).tolist() == [np.inf, 0.0]


def test_double_double_error_is_far_inside_the_margin() -> None:
    """The float64 path trusts its wide value to ``MARGIN64``; it must be much better than that."""
    rng = np.random.default_rng(11)
    k = rng.integers(-1_100_000, 1_048_000, 4000)
    # r at both ends of its range (|r| near ln2/2048) and in between
    r = rng.choice([-1, 1], 4000) * rng.uniform(0, 1, 4000) ** 0.2 * (np.log(2) / 2048)
    x = np.concatenate([k * (np.log(2) / 1024) + r, rng.normal(0, 3, 1000)])
    x = x[(x > exact.UNDER64) & (x < exact.OVER64)]
    hi, lo, m = dd.exp(x)
    ctx = Context(prec=80)
    worst = Decimal(0)
    for v, h, low, e in zip(x.tolist(), hi.tolist(), lo.tolist(), m.tolist(), strict=True):
        true = ctx.exp(Decimal(v))
        got = ctx.multiply(ctx.add(Decimal(h), Decimal(low)), ctx.power(2, e))
        worst = max(worst, abs(ctx.divide(ctx.subtract(got, true), true)))
    assert worst < Decimal(2) ** -86 < Decimal(exact.MARGIN64) / 2**12
