"""The fast exact ``exp`` against an independent reference on a million inputs per dtype, and its thresholds.

Every entry :func:`tracer.core.exact.exp` returns must be the float nearest
``e**x``.  The reference decides each entry in one of two ways, both
independent of the code under test:

* a **wider float** (float64 for float32 results, the platform's long double
  for float64 results) computes ``e**x`` with an error of a few units of its
  own last place; where that value lies farther than a generous margin
  (:data:`WIDE_ULPS` of those units) from every halfway point between
  neighbouring target floats, it decides the rounding on its own;
* every other entry (close to a halfway point, or a result near 0, the largest
  float or infinity) goes to :mod:`decimal` at 60 digits, rounded by comparing
  with the exact halfway points (no float arithmetic decides a side).

A sample of entries the wide float decided is also sent to :mod:`decimal`, so
the margin is shown to hold on this machine rather than assumed.  The inputs
cover the whole useful range (where the result is neither 0 nor inf), with
extra weight on the places where fast methods go wrong: results near the
overflow and underflow thresholds, the subnormal results, tiny ``|x|`` where
``e**x`` is within an ulp of 1, and the specials.

(Until this split, :mod:`decimal` decided all two million entries: about a
third of the whole suite's time for the same verdict.)
"""

from __future__ import annotations

from decimal import Context, Decimal

import numpy as np
import pytest

from tracer.core import dd, exact

pytestmark = pytest.mark.slow

SAMPLES = 1_000_000
#: the wide float decides an entry only this many of its own ulps away from a halfway point
WIDE_ULPS = 8
#: entries the wide float decided that are checked against decimal too
AUDIT = 4000
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


def _reference(xs: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``e**x`` correctly rounded, entry by entry, from 60 digits (the slow, obvious way)."""
    out = np.empty(xs.shape, dtype=dtype)
    for n, v in enumerate(xs.tolist()):
        if v != v or v in (float("inf"), float("-inf")) or v == 0:
            out[n] = np.exp(np.asarray(v, dtype=dtype))  # nan, inf, 0 and 1: exact in every library
        else:
            out[n] = _nearest(CTX.exp(Decimal(v)), dtype)
    return out


def _wide(xs: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The wide float's roundings of ``e**x`` and a mask of the entries it decides with room to spare.

    The halfway points between neighbouring floats of ``dtype`` are exact in the
    wider type (one more bit than ``dtype``'s significand), so the distance from
    the wide value to each is computed without rounding.
    """
    wide = np.longdouble if dtype == np.float64 else np.float64
    if np.finfo(wide).nmant <= np.finfo(dtype).nmant + 1:  # no wider float here: decimal decides all
        return np.zeros(xs.shape, dtype), np.zeros(xs.shape, bool)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        w = np.exp(xs.astype(wide))
        r = w.astype(dtype)
        up = np.nextafter(r, dtype.type(np.inf)).astype(wide)
        down = np.nextafter(r, dtype.type(0)).astype(wide)
        rw = r.astype(wide)
        margin = WIDE_ULPS * np.finfo(wide).eps * w
        sure = (w - (rw + down) / 2 > margin) & ((rw + up) / 2 - w > margin)
    # results at 0, the least subnormal, the largest float or inf, and non-finite arguments go to decimal
    tiny = np.nextafter(dtype.type(0), dtype.type(1))
    sure &= np.isfinite(xs) & np.isfinite(up) & (r > tiny) & (r < np.finfo(dtype).max)
    return r, sure


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
    want, sure = _wide(x, np.dtype(dtype))
    slow = np.flatnonzero(~sure)
    want[slow] = _reference(x[slow], np.dtype(dtype))
    # the wide float is trusted only where decimal agrees with it on a sample of its decisions
    audit = np.random.default_rng(7).choice(np.flatnonzero(sure), AUDIT, replace=False)
    assert np.array_equal(_reference(x[audit], np.dtype(dtype)), want[audit])
    # decimal decides a small share (the suite's time depends on it), and some of every kind of result
    assert slow.size < SAMPLES // 20, slow.size
    assert np.isinf(want[slow]).any() and (want[slow] == 0).any() and (want[slow] > 0).any()
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
