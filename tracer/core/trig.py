"""Correctly rounded ``cos`` and ``sin``: the same bits on every machine, for rotary position embeddings.

``torch.cos`` and ``torch.sin`` on a CPU run vectorized kernels chosen by the
instruction set (SLEEF's, MKL's), accurate to about one unit in the last
place but not always the *same* unit: the last bit of a rotation, and of every
score after it, would move from machine to machine.  Here, as in
:mod:`tracer.core.exact` for ``exp``, each value is the float nearest the
true ``cos x`` or ``sin x`` (no ties: both are irrational at every float
``x`` other than 0, where they are 1 and 0 exactly).

* **float32**: ``numpy.cos`` and ``numpy.sin`` in float64 are within a few
  float64 units of the true value (argument reduction exact, as every libm and
  SIMD implementation numpy uses does it), ``2**-29`` of a float32 unit.
  Rounding to float32 is then right unless the true value lies that close to
  a halfway point between two float32s: entries within :data:`MARGIN`
  (``2**-40`` relative) of one, and entries below ``2**-20`` in size (where a
  relative error bound is the least certain), are worked out with
  :mod:`decimal`.
* **float64**: every entry is worked out with :mod:`decimal` (a rotary table
  has ``T · d/2`` angles, a few thousand at most in a lesson): ``x`` reduced
  by ``π/2`` with a ``π`` of enough digits for ``x``'s size, then the Taylor
  series of sin or cos of the remainder, with 60 digits, and 200 where the
  error bar of 60 straddles a halfway point (Ziv's strategy).

The entries sent to :mod:`decimal` are counted, as :func:`tracer.core.exact.exp`
counts its own (:func:`tracer.core.exact.counting`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Context, Decimal
from functools import cache
from typing import Any

import numpy as np

from tracer.core import exact

MARGIN = 2.0**-40
"""float32: relative distance to a halfway point below which the float64 value is not trusted."""
SMALL = 2.0**-20
"""float32: results smaller than this go to :mod:`decimal` whatever their distance to a halfway point."""
_EXACT = Context(prec=2000)


def cos(x: np.ndarray) -> np.ndarray:
    """``cos x`` for each entry, correctly rounded to ``x``'s dtype (float32 or float64)."""
    return _trig(np.asarray(x), "cos")


def sin(x: np.ndarray) -> np.ndarray:
    """``sin x`` for each entry, correctly rounded to ``x``'s dtype (float32 or float64)."""
    return _trig(np.asarray(x), "sin")


def frequencies(base: float, d: int, dtype: np.dtype[Any]) -> np.ndarray:
    """RoPE's ``θ_p = base**(-2(p-1)/d)`` for ``p = 1..d/2``, each correctly rounded to ``dtype``.

    torch's ``1.0 / base ** (torch.arange(0, d, 2) / d)`` rounds twice (the
    power, then the division) and its power is a vector kernel too; here the
    power is worked out with :mod:`decimal` (60 digits, 200 where 60 leave
    the rounding open), so the table is the same on every machine.
    """
    round_to: Callable[[Decimal], np.floating[Any]] = exact._nearest32 if dtype == np.float32 else exact._nearest64
    out = np.empty(d // 2, dtype=dtype)
    for p in range(d // 2):
        for digits in (60, 200):
            ctx = Context(prec=digits)
            value = ctx.power(Decimal(base), ctx.divide(Decimal(-2 * p), Decimal(d)))
            slack = value.scaleb(-digits + 4, _EXACT)
            lo, hi = round_to(_EXACT.subtract(value, slack)), round_to(_EXACT.add(value, slack))
            if lo == hi:
                out[p] = lo
                break
        else:
            raise ArithmeticError(f"base**(-{2 * p}/{d}): rounding undecided at 200 digits")
    return out


def _trig(a: np.ndarray, fn: str) -> np.ndarray:
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{fn}: unsupported dtype {a.dtype}")
    flat = a.reshape(-1)
    finite = np.isfinite(flat)
    if a.dtype == np.float32:
        with np.errstate(invalid="ignore"):
            d = np.cos(flat.astype(np.float64)) if fn == "cos" else np.sin(flat.astype(np.float64))
        out = d.astype(np.float32)
        f64 = out.astype(np.float64)
        up = np.nextafter(out, np.float32(np.inf)).astype(np.float64)
        down = np.nextafter(out, np.float32(-np.inf)).astype(np.float64)
        mag = np.abs(d)
        with np.errstate(invalid="ignore"):
            near = (np.abs(d - (f64 + up) / 2) <= MARGIN * mag) | (np.abs(d - (f64 + down) / 2) <= MARGIN * mag)
        todo = np.flatnonzero(finite & (near | (mag < SMALL)))
    else:
        out = np.full(flat.shape, np.nan)
        todo = np.flatnonzero(finite)
    for n in todo:
        out[n] = nearest(float(flat[n]), fn, a.dtype)
    out[~finite] = np.nan  # cos and sin of ±inf and NaN are NaN
    exact._count(int(flat.size), int(todo.size))
    return out.reshape(a.shape)


def nearest(x: float, fn: str, dtype: np.dtype[Any]) -> np.floating[Any]:
    """The float of ``dtype`` nearest ``cos x`` or ``sin x`` (``fn``), decided with :mod:`decimal`."""
    if x == 0:
        zero: np.floating[Any] = dtype.type(1.0 if fn == "cos" else x)  # sin(-0.0) is -0.0
        return zero
    round_to: Callable[[Decimal], np.floating[Any]] = exact._nearest32 if dtype == np.float32 else exact._nearest64
    for digits in (60, 200):
        value = series(x, fn, digits)
        slack = abs(value).scaleb(-digits + 4, _EXACT)  # the series' error is far below 10**-(digits-4)
        lo, hi = _EXACT.subtract(value, slack), _EXACT.add(value, slack)
        if lo.is_signed() == hi.is_signed():
            a, b = (_signed(v, round_to) for v in (lo, hi))
            if a == b:
                return a
    raise ArithmeticError(f"{fn}({x!r}): rounding undecided at 200 digits")  # never seen: see the tests


def _signed(v: Decimal, round_to: Callable[[Decimal], np.floating[Any]]) -> np.floating[Any]:
    """``v`` rounded to the nearest float by ``round_to`` (which takes positive values), sign kept."""
    r = round_to(abs(v))
    return -r if v.is_signed() else r


def series(x: float, fn: str, digits: int) -> Decimal:
    """``cos x`` or ``sin x`` to about ``digits`` significant digits (for ``x`` of any float size).

    ``x = n·π/2 + r`` with ``|r| <= π/4``, from a ``π`` of ``digits`` plus
    as many digits as ``x`` has before its point plus 30: the remainder keeps
    ``digits`` significant digits even for the float closest to a multiple of
    ``π/2`` (about ``2**-62`` away, relative).  Then ``sin r`` or ``cos r``
    from its Taylor series, which the quadrant ``n mod 4`` picks and signs.
    """
    extra = max(0, int(math.log10(abs(x)) + 1)) + 30
    ctx = Context(prec=digits + extra)
    half_pi = ctx.divide(_pi(digits + extra), 2)
    d = Decimal(x)  # exact: a float is a binary fraction
    n = int(ctx.divide(d, half_pi).to_integral_value())
    r = ctx.subtract(d, ctx.multiply(n, half_pi))
    want_sin = (fn == "sin") == (n % 2 == 0)
    value = _taylor(r, want_sin, Context(prec=digits + 10))
    quadrant = n % 4
    # sin: sin r, cos r, -sin r, -cos r; cos: cos r, -sin r, -cos r, sin r (quadrants 0 to 3)
    negate = quadrant in (1, 2) if fn == "cos" else quadrant in (2, 3)
    return -value if negate else value


def _taylor(r: Decimal, odd: bool, ctx: Context) -> Decimal:
    """``sin r`` (``odd``) or ``cos r`` for ``|r| <= π/4``, summed until a term is below the precision."""
    term = r if odd else Decimal(1)
    total = term
    sq = ctx.multiply(r, r)
    k = 1 if odd else 0
    tiny = Decimal(10) ** (-ctx.prec - 2)
    while abs(term) > tiny * abs(total):
        term = ctx.divide(ctx.multiply(-term, sq), (k + 1) * (k + 2))
        total = ctx.add(total, term)
        k += 2
    return total


@cache
def _pi(digits: int) -> Decimal:
    """π to ``digits`` digits (the :mod:`decimal` documentation's series, with guard digits)."""
    ctx = Context(prec=digits + 10)
    three = Decimal(3)
    lasts, t, s, n, na, d, da = Decimal(0), three, three, 1, 0, 0, 24
    while s != lasts:
        lasts = s
        n, na = n + na, na + 8
        d, da = d + da, da + 32
        t = ctx.divide(ctx.multiply(t, n), d)
        s = ctx.add(s, t)
    return s
