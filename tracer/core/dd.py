"""``e**x`` in double-double arithmetic: two float64s whose sum carries about 106 bits, vectorized in numpy.

:func:`tracer.core.exact.exp` needs, for float64, a value of ``e**x`` much
closer than one float64 unit, so that it can tell which way to round without
:mod:`decimal`.  A double-double ``(hi, lo)`` stands for ``hi + lo`` exactly;
sums and products of two floats are turned into double-doubles with no error
at all by Knuth's and Dekker's algorithms (:func:`_two_sum`, :func:`_two_prod`),
so only plain IEEE operations run and every machine gets the same bits.

The evaluation: ``k = rint(x · 1024/ln 2)``, ``r = x − k·ln2/1024`` with
``ln2/1024`` split in three parts so that the first two products with ``k``
are exact (``|r| <= ln2/2048``, about 3.4e-4); then
``e**x = 2**m · 2**(j/1024) · e**r`` with ``k = 1024 m + j``, the 1,024
values ``2**(j/1024)`` worked out once with :mod:`decimal`, and ``e**r`` as
``1 + r + r²/2`` in double-double plus the rest of its Taylor series in
float64.  The error: the float64 tail ``r³/6 + … + r⁷/5040`` (below 6.5e-12)
rounds four times, about ``2**-88`` of the whole; everything else is near
``2**-100``.  ``tests/test_exact_million.py`` measures it below ``2**-86``.
"""

from __future__ import annotations

import functools
from decimal import Context, Decimal

import numpy as np

_CTX = Context(prec=60)
_N = 1024
_INV = _N / float(_CTX.ln(2))
"""``1024/ln 2`` (rounded: it only picks ``k``; the reduction below is exact for any ``k``)."""


def _split_ln2() -> tuple[float, float, float]:
    """``ln2/1024`` as three float64s: the first two of 32 bits, so ``k`` times either is exact (``|k| < 2**21``)."""
    c = _CTX.divide(_CTX.ln(2), _N)
    parts = []
    for _ in range(2):
        head = float(c)
        e = int(np.frexp(head)[1])
        head = float(np.ldexp(np.round(np.ldexp(head, 32 - e)), e - 32))
        parts.append(head)
        c = _CTX.subtract(c, Decimal(head))
    parts.append(float(c))
    return parts[0], parts[1], parts[2]


_C1, _C2, _C3 = _split_ln2()


@functools.cache
def _table() -> tuple[np.ndarray, np.ndarray]:
    """``2**(j/1024)`` for ``j = 0 … 1023`` as double-doubles (head, tail), from 40 digits, once a process."""
    ctx = Context(prec=40)
    heads, tails = np.empty(_N), np.empty(_N)
    ln2 = ctx.ln(2)
    for j in range(_N):
        value = ctx.exp(ctx.multiply(ln2, ctx.divide(j, _N)))
        heads[j] = float(value)
        tails[j] = float(ctx.subtract(value, Decimal(heads[j])))
    return heads, tails


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a + b`` as its rounded sum and the exact error (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _fast_two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same for ``|a| >= |b|`` (Dekker)."""
    s = a + b
    return s, b - (s - a)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a`` as two halves of 26 bits each (Veltkamp), whose products are exact."""
    t = 134217729.0 * a
    hi = t - (t - a)
    return hi, a - hi


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a * b`` as its rounded product and the exact error (Dekker)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def exp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``e**x = 2**m · (hi + lo)``, ``hi + lo`` within ``2**-86`` relative (see the module docstring).

    For finite ``x`` strictly between ``exact.UNDER64`` and ``exact.OVER64``:
    ``hi`` lies in about ``[0.9997, 2)``, ``|lo| <= ulp(hi)/2``; ``m`` is an
    int64 array.
    """
    k = np.rint(x * _INV)
    # x - k·C1 is exact (k·C1 has at most 53 bits and lies within a factor 2 of x, or k = 0), and so is k·C2
    rh, rl = _two_sum(x - k * _C1, -(k * _C2))
    rl = rl - k * _C3
    rh, rl = _fast_two_sum(rh, rl)  # r = x - k ln2/1024, |r| <= ln2/2048 (about 3.4e-4)
    ki = k.astype(np.int64)
    j = ki & (_N - 1)
    m = ki >> 10  # floor division, negative k included
    sh, sl = _two_prod(rh, rh)
    sl = sl + 2 * rh * rl  # r² as a double-double
    # r³/6 + … + r⁷/5040 is below 6.5e-12: plain float64 carries it to about 2**-88 of the whole
    tail = rh * sh * (1 / 6 + rh * (1 / 24 + rh * (1 / 120 + rh * (1 / 720 + rh * (1 / 5040)))))
    u, eu = _two_sum(sh * 0.5, tail)  # r²/2 + the tail, its rounding error kept
    ph, pl = _two_sum(np.ones_like(rh), rh)
    ph, e2 = _two_sum(ph, u)
    pl = pl + (rl + (e2 + (eu + sl * 0.5)))
    ph, pl = _fast_two_sum(ph, pl)  # e**r
    th, tl = _table()
    th, tl = th[j], tl[j]
    hi, lo = _two_prod(ph, th)
    lo = lo + (ph * tl + pl * th)
    hi, lo = _fast_two_sum(hi, lo)
    return hi, lo, m
