"""How far a library's matrix form may be from our loop form: error bounds fixed by the maths.

A matrix product from a BLAS library adds the same products as our loop, but
in an order (and with fused multiply-adds) chosen by the kernel that runs,
which depends on the CPU and the thread count.  So its last bits move from
machine to machine, and a report must not print them.  What does not move is
the bound every order obeys.  With ``u`` the unit roundoff of the dtype
(``2**-24`` for float32) and ``γ(n) = n·u / (1 − n·u)`` (Higham, *Accuracy and
Stability of Numerical Algorithms*, §3.1):

* a sum of ``n`` products, in any order, with or without fused multiply-adds,
  is within ``γ(n) · Σ|a_k b_k|`` of the exact sum;
* a softmax computed as ``exp(x − max) / Σ exp(…)`` with an ``exp`` accurate to
  ``K`` units in the last place is within a relative ``r`` of the exact one
  (:func:`softmax_rel`); torch's vectorised softmax uses an ``exp`` good to 20
  units (``LIBRARY_EXP_ULPS``), ours is correctly rounded (half a unit);
* if the inputs of a softmax move by at most ``Δ``, each weight moves by at most
  a factor ``e^{2Δ}``.

Each bound here is elementwise, for ``|library form − loop form|``: the loop
form is itself one evaluation order, so the two are within the sum of their
distances to the exact value.  The loop form's values are the same bits on
every machine (``tracer.core.exact``), and the bounds are worked out from them
with float64 additions and multiplications in a fixed order, so the bounds,
too, are the same bits everywhere; :func:`shown` rounds one up for print.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

import numpy as np

LIBRARY_EXP_ULPS = 20.0
"""Accuracy of the ``exp`` inside torch's vectorised softmax (its ``exp_u20``), in units in the last place."""
LOOP_EXP_ULPS = 0.5
"""Our ``exp`` is correctly rounded."""


def unit(dtype: np.dtype | str) -> float:
    """The unit roundoff ``u``: half the distance from 1 to the next float (``2**-24`` for float32)."""
    return float(np.finfo(np.dtype(dtype)).eps) / 2


def gamma(n: int, u: float) -> float:
    """``γ(n) = n·u / (1 − n·u)``: the relative error bound of ``n`` rounded operations."""
    if n * u >= 1:
        return float("inf")
    return n * u / (1 - n * u)


def sums(mag: np.ndarray, n: int, u: float) -> np.ndarray:
    """Bound of ``|library Σ − left-to-right Σ|`` for ``n`` terms whose magnitudes add up to ``mag``.

    ``mag`` is ``Σ_k |t_k|`` of the recorded terms (products ``fl(a_k b_k)``,
    a bias counted as one more term).  A library sum of the same exact terms
    in any order, fused multiply-adds or not, is within ``γ(n)·Σ|a_k b_k|``
    of the exact sum, and so is the loop form; ``Σ|a_k b_k| ≤ mag / (1 − u)``.
    So the bound is ``2·γ(n)·mag / (1 − u)``, plus ``n`` times the smallest
    float32 subnormal for products that underflowed.
    """
    return 2 * gamma(n, u) * np.asarray(mag, dtype=np.float64) / (1 - u) + n * 2.0**-149


def _exp_up(y: float) -> float:
    """An upper bound of ``e**y − 1`` for ``0 ≤ y ≤ 1`` with plain arithmetic (``y + y²``); inf beyond."""
    return y + y * y if 0 <= y <= 1 else float("inf")


def contract(spec: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.einsum(spec, a, b)`` for one summed index, added in a fixed order (the same bits everywhere)."""
    ins, out = spec.split("->")
    sa, sb = ins.split(",")
    (k,) = (set(sa) | set(sb)) - set(out)
    full = (*out, k)

    def align(x: np.ndarray, s: str) -> np.ndarray:
        present = [c for c in full if c in s]
        t = np.transpose(x, [s.index(c) for c in present])
        return t.reshape([t.shape[present.index(c)] if c in s else 1 for c in full])

    xa, xb = align(np.asarray(a, dtype=np.float64), sa), align(np.asarray(b, dtype=np.float64), sb)
    n = max(xa.shape[-1], xb.shape[-1])
    shape = np.broadcast_shapes(xa.shape[:-1], xb.shape[:-1])
    acc = np.zeros(shape, dtype=np.float64)
    term = np.empty(shape, dtype=np.float64)
    for j in range(n):  # in place: the same roundings as acc = acc + a·b, without a new array per term
        np.multiply(xa[..., min(j, xa.shape[-1] - 1)], xb[..., min(j, xb.shape[-1] - 1)], out=term)
        np.add(acc, term, out=acc)
    return acc


def matmul(spec: str, a: np.ndarray, ea: np.ndarray, b: np.ndarray, eb: np.ndarray, u: float) -> np.ndarray:
    """Bound of ``|library(A·B) − loop(a·b)|`` where ``|A − a| ≤ ea`` and ``|B − b| ≤ eb`` elementwise.

    ``a`` and ``b`` are the loop form's operands; the library multiplied
    operands within ``ea``/``eb`` of them.  The bound is
    ``|a|·eb + ea·|b| + ea·eb`` (the operands differ) plus
    ``γ(n)·((|a|+ea)·(|b|+eb) + |a|·|b|)`` (each form's own rounding).
    """
    ins, out = spec.split("->")
    sa, sb = ins.split(",")
    (k,) = (set(sa) | set(sb)) - set(out)
    n = int(np.shape(a)[sa.index(k)])
    aa, bb = np.abs(np.asarray(a, dtype=np.float64)), np.abs(np.asarray(b, dtype=np.float64))
    ea, eb = np.broadcast_to(ea, aa.shape), np.broadcast_to(eb, bb.shape)
    sizes = {**dict(zip(sb, bb.shape, strict=True)), **dict(zip(sa, aa.shape, strict=True))}
    zero = np.zeros([sizes[ch] for ch in out])

    def c(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        # a sum of finite terms times an all-zero operand is exactly 0, and x + 0 is x: skipping it
        # (given data has no error) leaves every bit of the result as it is
        if not (np.any(x) and np.any(y)) and np.isfinite(x).all() and np.isfinite(y).all():
            return zero
        return contract(spec, x, y)

    moved = c(aa, eb) + c(ea, bb) + c(ea, eb)
    rounding = gamma(n, u) * (c(aa + ea, bb + eb) + c(aa, bb))
    return np.asarray(moved + rounding, dtype=np.float64)


def scaled(x: np.ndarray, e: np.ndarray, s: float, u: float) -> np.ndarray:
    """Bound of ``|fl(X / s) − fl(x / s)|`` for ``|X − x| ≤ e``, division or multiplication by ``1/s`` alike.

    ``x`` is the loop form's quotient; each form rounds at most twice.
    """
    ax = np.abs(np.asarray(x, dtype=np.float64))
    ax = np.where(np.isfinite(ax), ax, 0.0)
    return (np.asarray(e, dtype=np.float64) / s) * (1 + 4 * u) + 4 * u * ax


def softmax_rel(n: int, spread: float, ulps: float, u: float) -> float:
    """Relative error bound of one softmax evaluation over ``n`` entries whose inputs span ``spread``.

    Computed as ``exp(x_j − m) / Σ_k exp(x_k − m)`` in any order: the
    subtraction moves each exponent by at most ``u·spread`` (a factor
    ``e^{±u·spread}``), ``exp`` is off by ``ulps`` units (relative ``2·ulps·u``),
    the sum by ``γ(n − 1)``, the division (or reciprocal and product) by ``γ(2)``.
    """
    eps = 2 * ulps * u
    g2, gn = gamma(2, u), gamma(max(n - 1, 0), u)
    grow = 1 + _exp_up(2 * u * spread)
    return grow * (1 + eps) / (1 - eps) * (1 + g2) / (1 - g2) * (1 + gn) / (1 - gn) - 1


def softmax(c: np.ndarray, x: np.ndarray, e: np.ndarray, axis: int, u: float) -> np.ndarray:
    """Bound of ``|library softmax(X) − loop softmax(x)|`` along ``axis``, for ``|X − x| ≤ e``.

    ``c`` is the loop form's result and ``x`` its input (``-inf`` where masked).
    With ``p`` the exact softmax of ``x``: ``|c − p| ≤ r_loop·p``, so
    ``p ≤ c / (1 − r_loop)``; the library's inputs move the weights by a factor
    ``e^{±2Δ}`` (``Δ`` the row's largest ``e``), and its own rounding by
    ``r_lib``.  The bound is ``p·(r_lib·e^{2Δ} + (e^{2Δ} − 1) + r_loop)``.
    """
    c = np.moveaxis(np.asarray(c, dtype=np.float64), axis, -1)
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    e = np.moveaxis(np.broadcast_to(np.asarray(e, dtype=np.float64), x.shape), axis, -1)
    out = np.zeros(c.shape, dtype=np.float64)
    for pos in np.ndindex(*c.shape[:-1]):
        live = np.isfinite(x[pos])
        if not live.any():
            continue
        delta = float(np.max(e[pos][live]))
        spread = float(np.max(x[pos][live]) - np.min(x[pos][live])) + 2 * delta
        n = int(live.sum())
        r_lib = softmax_rel(n, spread, LIBRARY_EXP_ULPS, u)
        r_loop = softmax_rel(n, spread, LOOP_EXP_ULPS, u)
        move = _exp_up(2 * delta)
        # two weights both lie in [0, 1], so they are never more than 1 apart: where the inputs are too
        # far apart for the estimate (r_loop >= 1, an inf, or 0·inf), 1 is the bound
        b = np.ones(c[pos].shape)
        if r_loop < 1:
            with np.errstate(invalid="ignore", over="ignore"):
                b = np.minimum(np.abs(c[pos]) / (1 - r_loop) * (r_lib * (1 + move) + move + r_loop), 1.0)
        out[pos] = np.where(live, np.where(np.isnan(b), 1.0, b), 0.0)
    return np.moveaxis(out, -1, axis)


def shown(bound: float) -> float:
    """``bound`` rounded up to two significant digits (``1.23e-07`` -> ``1.3e-07``), exactly."""
    if not np.isfinite(bound) or bound <= 0:
        return float(bound)
    d = Decimal(bound)
    shift = d.adjusted() - 1
    up = d.scaleb(-shift).to_integral_value(rounding=ROUND_CEILING).scaleb(shift)
    r = float(up)
    return r if r >= bound else float(np.nextafter(r, np.inf))
