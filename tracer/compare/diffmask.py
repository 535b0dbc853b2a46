"""Boolean-mask algebra for diffing traces: which entries differ, and which inputs they read.

Everything here works on whole numpy arrays, so comparing two traces of tens
of millions of steps costs a few passes over memory and no Python loop over
elements:

* :func:`compare` says, entry by entry, which values are not *close*
  (``|a - b| > atol + rtol * |b|``, NaN close to NaN, an infinity only to the
  same infinity) and which are not *equal* at all;
* :func:`carry` moves an operand's mask to the node that reads it, following
  the node's index expressions (``*`` reduces with *any*, ``k-1`` shifts);
* :func:`scan` resolves a node that reads its own previous entry (a running
  sum), plane by plane along that axis.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

import numpy as np

from tracer.core.trace import Ref

CHUNK = 1 << 18
"""Entries compared per block: the temporaries stay in cache, which roughly halves the time."""

_EXPR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)([+-][0-9]+)?")


class Comparison(NamedTuple):
    """Entry masks of one node (None when no entry qualifies) and its largest ``|a - b|`` (NaN skipped, inf kept)."""

    bad: np.ndarray | None  # not close: beyond tolerance
    ne: np.ndarray | None  # not equal at all (NaN equals NaN)
    big: float


def compare(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> Comparison:
    """Compare two same-shape arrays entry by entry; bit-identical arrays return at once."""
    if a.dtype != b.dtype:
        a, b = a.astype(np.float64), b.astype(np.float64)
    order = tuple(int(i) for i in np.argsort([-s for s in a.strides], kind="stable")) if a.ndim else ()
    at, bt = _contiguous(a.transpose(order)), _contiguous(b.transpose(order))  # no copy in a's own order
    af, bf = at.reshape(-1), bt.reshape(-1)
    bits = np.dtype(f"u{af.dtype.itemsize}")
    if np.array_equal(af.view(bits), bf.view(bits)):
        return Comparison(None, None, 0.0)
    bad = np.empty(af.shape, dtype=bool)
    ne = np.empty(af.shape, dtype=bool)
    big = 0.0
    d = np.empty(min(CHUNK, af.size), dtype=af.dtype)
    tol = np.empty_like(d)
    with np.errstate(all="ignore"):
        for lo in range(0, af.size, CHUNK):
            hi = min(lo + CHUNK, af.size)
            n = hi - lo
            big = max(big, _block(af[lo:hi], bf[lo:hi], d[:n], tol[:n], bad[lo:hi], ne[lo:hi], rtol, atol))
    inverse = tuple(int(i) for i in np.argsort(order)) if a.ndim else ()
    shaped = [m.reshape(at.shape).transpose(inverse) for m in (bad, ne)]
    return Comparison(shaped[0] if bad.any() else None, shaped[1] if ne.any() else None, big)


def _contiguous(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else a.copy()


def _block(
    a: np.ndarray,
    b: np.ndarray,
    d: np.ndarray,
    tol: np.ndarray,
    bad: np.ndarray,
    ne: np.ndarray,
    rtol: float,
    atol: float,
) -> float:
    """Fill ``bad`` and ``ne`` for one block; return its largest ``|a - b|``, skipping NaN."""
    np.subtract(a, b, out=d)
    np.abs(d, out=d)
    np.abs(b, out=tol)
    tol *= rtol
    tol += atol
    np.less_equal(d, tol, out=bad)
    np.logical_not(bad, out=bad)  # a NaN difference is never <= tol, so it counts as bad here
    np.not_equal(a, b, out=ne)
    top = float(d.max()) if d.size else 0.0
    if math.isnan(top):  # NaN is equal to NaN at the same position
        same = np.isnan(a) & np.isnan(b)
        bad &= ~same
        ne &= ~same
        top = float(np.fmax.reduce(d)) if d.size else 0.0
    inf = np.isinf(b)
    if inf.any():  # an infinite B: only the same infinity is close (rtol * inf is nan when rtol is 0)
        bad[inf] = a[inf] != b[inf]
    return 0.0 if math.isnan(top) else top


def carry(status: np.ndarray, ref: Ref, axes: tuple[str, ...], shape: tuple[int, ...]) -> np.ndarray | bool:
    """Carry an operand's mask to the reading node: entry [n] is True if any operand entry it reads is.

    ``ref.index`` says, per operand axis, which entry is read: ``"i"`` the
    same position, ``"k-1"`` the previous one (none at the start), ``"*"``
    every entry (reduced with *any*).  The result broadcasts against
    ``shape``, the reading node's shape.  A whole-tensor read, or an index
    this cannot follow, gives one bool for the whole node.
    """
    if ref.index is None or len(ref.index) != status.ndim:
        return bool(status.any())
    m = status
    stars = tuple(d for d, e in enumerate(ref.index) if e == "*")
    if stars:
        m = np.asarray(m.any(axis=stars))
    named: list[tuple[str, int]] = []
    for e in ref.index:
        if e == "*":
            continue
        t = _EXPR.fullmatch(e)
        if t is None or t.group(1) not in axes:
            return bool(m.any())
        named.append((t.group(1), int(t.group(2) or 0)))
    names = [a for a, _ in named]
    if len(set(names)) != len(names):
        return bool(m.any())
    for d, (axis, off) in enumerate(named):
        m = shift(m, d, off, shape[axes.index(axis)])
    order = sorted(range(len(names)), key=lambda d: axes.index(names[d]))
    return m.transpose(order).reshape([shape[i] if a in names else 1 for i, a in enumerate(axes)])


def first(mask: np.ndarray, k: int) -> list[tuple[int, ...]]:
    """The 0-based positions of the first ``k`` True entries, in C (id) order, reading only as far as needed."""
    if mask.ndim == 0:
        return [()] if k > 0 and bool(mask) else []
    if mask.ndim == 1:
        return [(int(i),) for i in np.flatnonzero(mask)[:k]]
    out: list[tuple[int, ...]] = []
    for i in range(mask.shape[0]):
        if len(out) >= k:
            break
        sub = mask[i]
        if sub.any():
            for rest in zip(*np.unravel_index(np.flatnonzero(sub)[: k - len(out)], sub.shape), strict=True):
                out.append((i, *(int(r) for r in rest)))
    return out


def relayout(m: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``m`` (broadcastable to ``like``) stored in ``like``'s memory order, so combining them is one straight pass."""
    if m.ndim != like.ndim or m.ndim == 0:
        return m
    order = tuple(int(i) for i in np.argsort([-s for s in like.strides], kind="stable"))
    return _contiguous(m.transpose(order)).transpose(tuple(int(i) for i in np.argsort(order)))


def shift(m: np.ndarray, d: int, off: int, n: int) -> np.ndarray:
    """Along axis ``d``, the length-``n`` array r with r[i] = m[i + off] (False where that is outside m)."""
    size = m.shape[d]
    lead = (slice(None),) * d
    if off == 0 and size >= n:
        return m[(*lead, slice(0, n))]
    out = np.zeros_like(m) if n == size else np.zeros((*m.shape[:d], n, *m.shape[d + 1 :]), dtype=bool)
    lo, hi = max(0, -off), min(n, size - off)
    if hi > lo:
        out[(*lead, slice(lo, hi))] = m[(*lead, slice(lo + off, hi + off))]
    return out


def self_step(ref: Ref, axes: tuple[str, ...]) -> tuple[int, int] | None:
    """For a node reading its own earlier entry (``s[i,j,k-1]``): (axis position, how far back), else None."""
    if ref.index is None or len(ref.index) != len(axes):
        return None
    found = None
    for pos, (e, axis) in enumerate(zip(ref.index, axes, strict=True)):
        t = _EXPR.fullmatch(e)
        if t is None or t.group(1) != axis:
            return None
        off = int(t.group(2) or 0)
        if off > 0 or (off < 0 and found is not None):
            return None
        if off < 0:
            found = (pos, -off)
    return found


def scan(ne: np.ndarray, base: np.ndarray, axis: int, back: int) -> np.ndarray:
    """``t[n] = ne[n] & (base[n] | t[n - back])`` along ``axis``: a change carried down a running sum."""
    nv = np.moveaxis(ne, axis, 0)
    tv = np.empty(nv.shape, dtype=bool)  # the scanned axis outermost, so each step is one contiguous plane
    np.logical_and(nv, np.moveaxis(base, axis, 0), out=tv)
    for n in range(back, len(tv)):
        tv[n] |= nv[n] & tv[n - back]
    moved: np.ndarray = np.moveaxis(tv, 0, axis)
    return moved
