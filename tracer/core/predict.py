"""Recompute a node's values from its operands, for the ops IEEE arithmetic fixes exactly.

Multiplication, addition, subtraction and division of two floats are
correctly rounded, so numpy here gives the very bits torch gave in the
pipeline; a running sum accumulated left to right is a chain of such
additions; a max or a total picked from the last running sum is a copy.  The
trace file uses this to store large tensors as *derived*: only the positions
where the stored value differs from the recomputation are written (see
``serialize``), so a file keeps every value bit for bit, including one that
was altered after recording.

``exp``, ``softmax`` and matrix products depend on the library's kernels and
are never derived.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tracer.core import tally

Fix = Callable[[int, np.ndarray], np.ndarray]
"""Corrects slice ``n`` of a predicted running sum (a stored patch) before the next is computed from it."""

PREDICTABLE = {"mul", "add", "sub", "div", "acc", "sum", "max", "masked_fill"}

_BINARY = {"mul": np.multiply, "add": np.add, "sub": np.subtract, "div": np.divide}


@dataclass
class Tally:
    """What :func:`counting` saw: entries of running sums read out of memory order."""

    scattered: int = 0
    """Entries read from planes whose neighbours in memory belong to other planes (a cache line per entry)."""


_TALLIES = tally.Tallies(Tally)


def counting() -> contextlib.AbstractContextManager[Tally]:
    """Count the entries running sums read out of memory order inside the block (a work count, not a time)."""
    return _TALLIES.counting()


def _moving(a: np.ndarray) -> list[int]:
    """The strides, in bytes, of ``a``'s axes that move through memory (more than one entry, not broadcast)."""
    return [abs(st) for st, n in zip(a.strides, a.shape, strict=True) if n > 1 and st != 0]


def innermost(a: np.ndarray, ax: int) -> bool:
    """True when axis ``ax`` of ``a`` has the smallest stride: a running sum along it walks memory in order."""
    moving = _moving(a)
    return a.shape[ax] > 1 and a.strides[ax] != 0 and abs(a.strides[ax]) == min(moving)


def _count(plane: np.ndarray) -> None:
    """Tally ``plane``'s entries as scattered when no axis of it steps one entry at a time."""
    moving = _moving(plane)
    if _TALLIES.open and moving and min(moving) > plane.itemsize:
        for t in _TALLIES.open:
            t.scattered += plane.size


def aligned(value: np.ndarray, index: tuple[str, ...], axes: tuple[str, ...]) -> np.ndarray | None:
    """``value`` read with axis names ``index``, broadcastable against ``axes`` (None if not plain)."""
    if any(a not in axes for a in index) or len(set(index)) != len(index):
        return None
    order = sorted(range(len(index)), key=lambda d: axes.index(index[d]))
    v = value.transpose(order)
    named = [index[d] for d in order]
    shape = [v.shape[named.index(a)] if a in named else 1 for a in axes]
    return v.reshape(shape)


def predict(
    op: str,
    axes: tuple[str, ...],
    shape: tuple[int, ...],
    args: list[dict[str, Any]],
    attrs: Mapping[str, Any],
    done: Mapping[str, np.ndarray],
    dtype: np.dtype,
    fix: Fix | None = None,
    like: np.ndarray | None = None,
    axes_of: Mapping[str, tuple[str, ...]] | None = None,
) -> np.ndarray | None:
    """The recomputed value of a node, or None when its op or layout is not derivable.

    ``done`` maps already-decoded node names to values.  For ``acc``,
    ``fix(slice_index, predicted_slice)`` may correct each slice before the
    next one is computed from it, so a stored difference propagates exactly as
    it did when the trace was recorded.  ``like`` is the recorded value, when
    saving: the result shares its memory layout (so comparing the two is a
    straight pass over memory), and each running sum is predicted from the
    stored previous one, exactly as loading will predict it.  ``axes_of`` maps
    the earlier nodes' names to their axes: a total (``sum``) is the last entry
    of its running sums along the summed axis, wherever that axis sits among
    theirs (``dsplit.b_out.per[b,c]`` reads ``dsplit.b_out.per.s[b,c,i]``,
    whose terms ``dsplit.out[b,i,c]`` have ``i`` in the middle).
    """
    if op not in PREDICTABLE:
        return None
    ops: list[tuple[np.ndarray, tuple[str, ...]]] = []
    if op == "acc":  # args: the running sum itself at the previous position, then the terms
        ops.append((np.empty(0, dtype=dtype), ()))
        args = args[1:]
    for a in args:
        src = done.get(a["node"])
        if src is None or "index" not in a or src.dtype != dtype:
            return None
        ops.append((src, tuple(a["index"])))
    if op in _BINARY and len(ops) == 2:
        x = aligned(ops[0][0], ops[0][1], axes)
        y = aligned(ops[1][0], ops[1][1], axes)
        if x is None or y is None:
            return None
        out = np.empty(shape, dtype=dtype) if like is None else np.empty_like(like, dtype=dtype)
        with np.errstate(all="ignore"):
            _BINARY[op](x, y, out=out, dtype=dtype)
        return out
    if op == "masked_fill" and len(ops) == 2:
        x = aligned(ops[0][0], ops[0][1], axes)
        m = aligned(ops[1][0], ops[1][1], axes)
        if x is None or m is None:
            return None
        fill = np.asarray(float(attrs.get("fill", "-inf")), dtype=dtype)
        return np.ascontiguousarray(np.broadcast_to(np.where(m != 0, fill, x), shape), dtype=dtype)
    over = attrs.get("over")
    if op == "acc" and len(ops) == 2 and over in axes:
        terms = aligned(ops[1][0], ops[1][1], axes)
        if terms is None:
            return None
        ax = axes.index(over)
        full = np.broadcast_to(terms, shape)
        if like is not None:
            # saving: predict each running sum from the *stored* previous one, as loading will
            res = np.empty_like(like, dtype=dtype)
            o, w, prev = np.moveaxis(res, ax, 0), np.moveaxis(full, ax, 0), np.moveaxis(like, ax, 0)
            o[0] = w[0]
            with np.errstate(all="ignore"):
                np.add(prev[:-1], w[1:], out=o[1:], dtype=dtype)
            return res
        if fix is None and innermost(full, ax):
            # the sums run along memory: numpy's accumulate adds left to right in one pass
            with np.errstate(all="ignore"):
                return np.add.accumulate(full, axis=ax, dtype=dtype)
        # one plane at a time, left to right: np.add.accumulate gives the same bits but walks a
        # leading axis line by line, many times slower on a T×T×d block
        work = np.moveaxis(full, ax, 0)
        out = np.empty(work.shape, dtype=dtype)
        with np.errstate(all="ignore"):
            out[0] = work[0] if fix is None else fix(0, work[0].copy())
            for n in range(1, work.shape[0]):
                _count(work[n])
                if fix is None:
                    np.add(out[n - 1], work[n], out=out[n, ...], dtype=dtype)  # a 0-d view for 1-d sums too
                else:
                    out[n] = fix(n, np.add(out[n - 1], work[n], dtype=dtype))
        return np.moveaxis(out, 0, ax)
    if op == "sum" and over is not None:
        return _total(str(attrs.get("partials")), str(over), axes, shape, done, axes_of)
    if op == "max" and len(ops) == 1 and over is not None:
        src, index = ops[0]
        if index.count("*") != 1:
            return None
        ax = index.index("*")
        with np.errstate(all="ignore"):
            m = np.max(src, axis=ax) if src.shape[ax] else None
        if m is None:
            return None
        rest = tuple(a for a in index if a != "*")
        got = aligned(m, rest, axes)
        return None if got is None else np.ascontiguousarray(np.broadcast_to(got, shape))
    return None


def _total(
    partials: str,
    over: str,
    axes: tuple[str, ...],
    shape: tuple[int, ...],
    done: Mapping[str, np.ndarray],
    axes_of: Mapping[str, tuple[str, ...]] | None,
) -> np.ndarray | None:
    """A total: the last running sum along ``over`` of node ``partials``, read in that node's own axis order.

    The running sums are laid out as their contraction lays them out, which
    need not put ``over`` last, nor keep the order of the total's axes; the
    total is taken along ``over`` wherever it is and aligned to ``axes``.
    None when the partials or their axes are unknown.
    """
    part = done.get(partials)
    part_axes = None if axes_of is None else axes_of.get(partials)
    if part is None or part_axes is None or over not in part_axes or part.ndim != len(part_axes):
        return None
    rest = tuple(a for a in part_axes if a != over)
    if sorted(rest) != sorted(axes) or not part.shape[part_axes.index(over)]:
        return None
    taken = np.take(part, -1, axis=part_axes.index(over))
    got = aligned(taken, rest, axes)
    return None if got is None or got.shape != shape else got
