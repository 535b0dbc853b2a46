"""A correctly rounded ``exp``: the same bits on every machine.

Products, sums and divisions of two floats are single IEEE operations, correctly
rounded by definition, so every CPU gives the same bits.  ``exp`` is not an IEEE
operation: ``torch.exp`` calls a vector library (MKL's, or its own), and which
kernel runs depends on the CPU's instruction set, so the last bit of an ``exp``
moved from machine to machine, and with it every weight and context vector.

Here ``exp`` is made exact in the sense IEEE uses for ``+``: the returned value
is the float nearest the true ``e**x`` (ties cannot happen: ``e**x`` is
irrational for every float ``x`` other than 0).

* float32: ``numpy.exp`` in float64 is within a few float64 units of ``e**x``,
  ``2**-29`` of a float32 unit.  Rounding it to float32 gives the nearest float32
  unless ``e**x`` lies that close to a halfway point between two float32s.  Those
  rare entries (their distance to the halfway point is tested with a margin of
  ``2**-40`` relative, far wider than numpy's error on any machine) are worked
  out with :mod:`decimal` to 60 digits, which decides the side exactly.
* float64: every entry with :mod:`decimal` (60 digits), then rounded once.
"""

from __future__ import annotations

from decimal import Context, Decimal

import numpy as np

_CTX = Context(prec=60)
MARGIN = 2.0**-40
"""Relative distance to a float32 halfway point below which the float64 shortcut is not trusted."""


def exp(x: np.ndarray) -> np.ndarray:
    """``e**x`` for each entry, correctly rounded to ``x``'s dtype (float32 or float64)."""
    a = np.asarray(x)
    if a.dtype == np.float32:
        return _exp32(a)
    if a.dtype == np.float64:
        flat = [_decimal_exp(float(v)) for v in a.ravel()]
        return np.array(flat, dtype=np.float64).reshape(a.shape)
    raise TypeError(f"exp: unsupported dtype {a.dtype}")


def _decimal_exp(v: float) -> float:
    """``e**v`` rounded once to the nearest float64 (60 correct digits, then ``float``'s exact rounding)."""
    if not np.isfinite(v) or v == 0:
        return float(np.exp(v))
    return float(_CTX.exp(Decimal(v)))


def _exp32(a: np.ndarray) -> np.ndarray:
    x64 = a.astype(np.float64)
    with np.errstate(over="ignore", under="ignore"):
        d = np.exp(x64)
        f = d.astype(np.float32)
    f64 = f.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = (f64 + np.nextafter(f, np.float32(-np.inf)).astype(np.float64)) / 2
        hi = (f64 + np.nextafter(f, np.float32(np.inf)).astype(np.float64)) / 2
        near = (np.abs(d - lo) <= MARGIN * d) | (np.abs(d - hi) <= MARGIN * d)
    # overflow and underflow to zero are decided exactly too; nan, +-inf and 0 are exact already
    edge = np.isfinite(x64) & (x64 != 0) & (~np.isfinite(f64) | (f64 == 0))
    todo = np.flatnonzero((near & np.isfinite(x64)) | edge)
    if todo.size:
        out = f.ravel().copy()
        for n in todo:
            out[n] = _nearest32(_CTX.exp(Decimal(float(x64.flat[n]))))
        return out.reshape(a.shape)
    return f


def _nearest32(value: Decimal) -> np.float32:
    """The float32 nearest ``value`` (> 0), compared exactly with its halfway points."""
    with np.errstate(over="ignore"):
        guess = np.float32(float(value)) if value < Decimal(2) ** 129 else np.float32(np.inf)
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
