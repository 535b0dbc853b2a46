"""A correctly rounded ``exp``: the same bits on every machine, at numpy speed.

Products, sums and divisions of two floats are single IEEE operations, correctly
rounded by definition, so every CPU gives the same bits.  ``exp`` is not an IEEE
operation: ``torch.exp`` calls a vector library (MKL's, or its own), and which
kernel runs depends on the CPU's instruction set, so the last bit of an ``exp``
moved from machine to machine, and with it every weight and context vector.

Here ``exp`` is made exact in the sense IEEE uses for ``+``: the returned value
is the float nearest the true ``e**x`` (ties cannot happen: ``e**x`` is
irrational for every float ``x`` other than 0).  It is done the way correctly
rounded maths libraries do it (Ziv's strategy): evaluate in a wider format,
vectorized, and work out exactly only the rare entries whose wide value lies
too close to a point halfway between two floats to say which way it rounds.

* **Overflow and underflow** are decided by two thresholds per dtype, each
  worked out once, exactly, with :mod:`decimal`: ``e**x`` rounds to ``inf``
  exactly when ``x`` is at least :data:`OVER` (``e**x`` past the point halfway
  between the largest float and ``2**128``, or ``2**1024``), and to 0 exactly
  when ``x`` is at most :data:`UNDER` (``e**x`` below half the smallest
  subnormal).  A whole array is compared with them at once.
* **float32**: ``numpy.exp`` in float64 is within a few float64 units of
  ``e**x``, ``2**-29`` of a float32 unit.  Rounding it to float32 gives the
  nearest float32 unless ``e**x`` lies that close to a halfway point; entries
  within :data:`MARGIN` (``2**-40`` relative) of one are worked out with
  :mod:`decimal`.
* **float64**: a double-double evaluation (two float64s whose sum carries about
  106 bits), vectorized in numpy: ``x = (64 m + j) ln2/1024 + r`` with
  ``|r| <= ln2/2048``, ``e**x = 2**m · 2**(j/1024) · e**r``, the 1,024 values
  ``2**(j/1024)`` computed once with :mod:`decimal`, ``e**r`` from its Taylor
  series (:mod:`tracer.core.dd`).  Its relative error is below ``2**-86``
  (``tests/test_exact_million.py`` measures it); entries within
  :data:`MARGIN64` (``2**-72``) of a halfway point go to :mod:`decimal`.
  Subnormal results are rounded on their own grid.

The entries sent to :mod:`decimal` are counted (:func:`counting`), so a test can
hold the slow path to a share of the work that no noisy machine can fake.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import TypeVar

import numpy as np

from tracer.core import dd, tally

_CTX = Context(prec=60)
_WIDE = Context(prec=200)
"""For the one entry in about 10**40 whose 60 digits still leave its rounding open."""
_EXACT = Context(prec=2000)
"""Wide enough to hold any sum of two float64s exactly (a subnormal needs 767 digits)."""

F = TypeVar("F", bound=np.floating)

MARGIN = 2.0**-40
"""float32: relative distance to a halfway point below which the float64 value is not trusted."""
MARGIN64 = 2.0**-72
"""float64: the same for the double-double value, whose error is below ``2**-86``."""


@dataclass
class Tally:
    """How many entries :func:`exp` saw, and how many of them took the slow exact path."""

    entries: int = 0
    slow: int = 0


_TALLIES = tally.Tallies(Tally)


def counting() -> contextlib.AbstractContextManager[Tally]:
    """Count the entries :func:`exp` evaluates, and those it sends to :mod:`decimal`, inside the block."""
    return _TALLIES.counting()


def _count(entries: int, slow: int) -> None:
    for t in _TALLIES.open:
        t.entries += entries
        t.slow += slow


def exp(x: np.ndarray) -> np.ndarray:
    """``e**x`` for each entry, correctly rounded to ``x``'s dtype (float32 or float64)."""
    a = np.asarray(x)
    if a.dtype == np.float32:
        return _exp32(a)
    if a.dtype == np.float64:
        return _exp64(a)
    raise TypeError(f"exp: unsupported dtype {a.dtype}")


# --- the thresholds ------------------------------------------------------------------------------


def _ln_side(bound: Decimal, dtype: type[np.floating], above: bool) -> np.floating:
    """The smallest float ``> ln(bound)`` (``above``) or the largest ``< ln(bound)``.

    ``ln(bound)`` is irrational, so no float equals it; 60 digits place it far
    from every float (checked: the nearest one is more than ``10**-40`` away).
    """
    target = _CTX.ln(bound)
    guess = dtype(float(target))
    step = dtype(np.inf) if above else dtype(-np.inf)
    back = dtype(-np.inf) if above else dtype(np.inf)
    while (Decimal(float(guess)) > target) != above:  # move onto the wanted side
        guess = np.nextafter(guess, step)
    while (Decimal(float(np.nextafter(guess, back))) > target) == above:  # then as close as it goes
        guess = np.nextafter(guess, back)
    assert abs(Decimal(float(guess)) - target) > Decimal(10) ** -40
    return guess


def _thresholds(dtype: type[np.floating]) -> tuple[np.floating, np.floating]:
    info = np.finfo(dtype)
    top = _EXACT.add(Decimal(float(info.max)), _EXACT.power(2, info.maxexp - info.nmant - 2))  # halfway to 2**maxexp
    bottom = _EXACT.power(2, info.minexp - info.nmant - 1)  # half the smallest subnormal
    return _ln_side(top, dtype, above=True), _ln_side(bottom, dtype, above=False)


OVER32, UNDER32 = _thresholds(np.float32)
"""float32: ``e**x`` rounds to ``inf`` for ``x >= OVER32`` (88.72284), to 0 for ``x <= UNDER32`` (-103.97208)."""
OVER64, UNDER64 = _thresholds(np.float64)
"""float64: the same, 709.782712893384 and -745.1332191019412."""
OVER = {np.dtype(np.float32): OVER32, np.dtype(np.float64): OVER64}
UNDER = {np.dtype(np.float32): UNDER32, np.dtype(np.float64): UNDER64}


def _finish(x: np.ndarray, out: np.ndarray, todo: np.ndarray, nearest: Callable[[float], np.floating]) -> np.ndarray:
    """Decide the ``todo`` entries (flat indices) with :mod:`decimal`, and set what the thresholds decide."""
    flat = out.reshape(-1)
    xs = x.reshape(-1)
    for n in todo:
        flat[n] = nearest(float(xs[n]))
    with np.errstate(invalid="ignore"):
        flat[xs >= OVER[x.dtype]] = np.inf
        flat[xs <= UNDER[x.dtype]] = 0
    _count(xs.size, int(todo.size))
    return flat.reshape(x.shape)


# --- float32 -------------------------------------------------------------------------------------


def _exp32(a: np.ndarray) -> np.ndarray:
    x64 = a.astype(np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        d = np.exp(x64)
        f = d.astype(np.float32)
        inside = (x64 > UNDER32) & (x64 < OVER32)
        # below the threshold the answer is finite: a float64 value just past the last halfway point says
        # nothing more than "near it", and the largest float32 is the candidate
        f[inside & np.isinf(f)] = np.finfo(np.float32).max
        f64 = f.astype(np.float64)
        up = np.nextafter(f, np.float32(np.inf)).astype(np.float64)
        up[np.isinf(up)] = 2.0**128  # past the largest float32, rounding goes to 2**128 (inf)
        down = np.nextafter(f, np.float32(-np.inf)).astype(np.float64)
        near = (np.abs(d - (f64 + up) / 2) <= MARGIN * d) | (np.abs(d - (f64 + down) / 2) <= MARGIN * d)
    return _finish(a, f, np.flatnonzero(near & inside), _slow32)


def _slow32(v: float) -> np.float32:
    return _settled(v, _nearest32)


def _nearest32(value: Decimal) -> np.float32:
    """The float32 nearest ``value`` (> 0), compared exactly with its halfway points."""
    with np.errstate(over="ignore"):
        guess = np.float32(float(value)) if value < _EXACT.power(2, 129) else np.float32(np.inf)
    for _ in range(3):
        below = np.nextafter(guess, np.float32(0))
        above = np.nextafter(guess, np.float32(np.inf))
        if np.isfinite(guess) and value > _half(guess, above):
            guess = above
        elif guess > 0 and value < _half(guess, below):
            guess = below
        else:
            break
    return guess


def _half(a: np.float32, b: np.float32) -> Decimal:
    """The exact halfway point of two neighbouring float32s (+inf stands for 2**128, where rounding overflows).

    Two neighbouring float32s and their mean are exact in float64.
    """
    fa, fb = (2.0**128 if np.isinf(v) else float(v) for v in (a, b))
    return Decimal((fa + fb) / 2)


def _settled(v: float, nearest: Callable[[Decimal], F]) -> F:
    """``nearest(e**v)`` from 60 digits, or from 200 where the 60 digits' error bar straddles a halfway point.

    :mod:`decimal`'s ``exp`` is correctly rounded to its precision, so the true
    value is within one unit of the 60th digit of the result.
    """
    value = _CTX.exp(Decimal(v))
    slack = value.scaleb(-58, _EXACT)
    if nearest(_EXACT.subtract(value, slack)) != nearest(_EXACT.add(value, slack)):
        value = _WIDE.exp(Decimal(v))
    return nearest(value)


# --- float64 -------------------------------------------------------------------------------------


def _exp64(a: np.ndarray) -> np.ndarray:
    flat = a.reshape(-1)
    with np.errstate(invalid="ignore"):
        inside = np.flatnonzero((flat > UNDER64) & (flat < OVER64))
    out = np.where(np.isnan(flat), np.nan, 0.0)  # the thresholds set inf and 0 in _finish
    hi, lo, m = dd.exp(flat[inside])
    res = np.empty_like(hi)
    near = np.zeros(hi.shape, dtype=bool)
    # normal results: round hi + lo to float64 (that is hi), then scale by 2**m exactly
    big = m > -1022
    h, lo_b, mb = hi[big], lo[big], m[big]
    up = np.nextafter(h, np.inf) - h
    down = h - np.nextafter(h, 0)
    near[big] = (np.abs(lo_b - up / 2) <= MARGIN64 * h) | (np.abs(lo_b + down / 2) <= MARGIN64 * h)
    with np.errstate(over="ignore"):  # 2 · 2**1023 only where the result is near the overflow point (near)
        res[big] = np.ldexp(h, mb)
    # results below 2**-1021 (subnormal, or the lowest binade): rounded to the grid of 2**-1074 itself
    small = ~big
    g = np.ldexp(1.0, -1074 - m[small])  # the grid step in units of hi: 2**-52 to 2
    q, t = hi[small] / g, lo[small] / g  # exact (powers of 2), q < 2**53
    n = np.rint(q)
    f = (q - n) + t
    n2 = n + np.rint(f)
    fr = f - np.rint(f)
    near[small] = np.abs(np.abs(fr) - 0.5) <= MARGIN64 * q + 2.0**-50
    res[small] = np.ldexp(n2, -1074)
    out[inside] = res
    todo = inside[near]
    return _finish(a, out.reshape(a.shape), todo, _slow64)


def _slow64(v: float) -> np.float64:
    return _settled(v, _nearest64)


def _nearest64(value: Decimal) -> np.float64:
    """The float64 nearest ``value``: ``float`` of a Decimal rounds correctly (it reads the decimal string)."""
    return np.float64(float(value))
