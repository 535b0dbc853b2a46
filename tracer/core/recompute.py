"""Recompute, entry by entry, the nodes whose values follow exactly from the operand entries they name.

A captured trace records layout ops (``view``, ``transpose``, ``cat``,
``stack``, indexing), writes through indexing, masks (``tril``, ``triu``,
comparisons, ``where``) and elementwise arithmetic whose operands are read
through index arithmetic (``"i+(b-1)*6"``, a broadcast ``"1"``: see
:func:`tracer.core.ids.index_expr`).  Each entry's operands are what its
references name, so each entry's value is fixed:

- a *copy* (layout ops and writes) holds exactly the one operand entry that
  is in range for it (for ``cat``, ``stack`` and writes, the references say,
  by falling outside their operand, which one that is);
- a *mask* or *elementwise* op is one IEEE operation, or a choice, of its
  operand entries (``clamp`` between its recorded ``min`` and ``max``): the
  same bits in numpy as in torch.

:func:`exact` gives the values a node must hold, or None when the node is
none of these kinds, or reads its operands in a way this cannot follow
(``"*"``, another dtype, an entry covered twice): :mod:`tracer.core.verify`
then lists it as not recomputed.  Work is done in chunks of the first axis,
so the index arrays stay small whatever the node's size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tracer.core import ids
from tracer.core.trace import Node

COPIES = frozenset(
    {
        "view", "reshape", "flatten", "unflatten", "view_as", "reshape_as",
        "transpose", "permute", "movedim", "moveaxis",
        "unsqueeze", "squeeze", "expand", "getitem",
        "cat", "stack", "split", "chunk", "unbind", "write",
        "concat", "split_heads", "join_heads", "repeat_interleave", "repeat", "lookup", "gather",
    }
)  # fmt: skip
"""Ops whose every entry is a copy of the one operand entry its references name."""

_BINARY: dict[str, Callable[..., Any]] = {
    "mul": np.multiply,
    "add": np.add,
    "sub": np.subtract,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative,
    "abs": np.abs,
    "square": lambda x: x * x,
    "relu": lambda x: np.where(np.isnan(x) | (x > 0), x, np.zeros_like(x)),
}  # not sqrt: a decomposed norm records torch's fused result under that name (tests/test_capture_transformer.py)
_COMPARE: dict[str, Callable[..., Any]] = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}
_CHOICES = frozenset({"masked_fill", "where", "compare", "not", "cast", "tril", "triu", "clamp"})
RESCALE = "rescale_add"
"""``a × b + c``, a multiplication then an addition, each rounded: lesson flash's running sum and accumulator."""
KINDS = COPIES | _BINARY.keys() | _UNARY.keys() | _CHOICES | {RESCALE}
"""Every op :func:`exact` may recompute."""

CHUNK = 1 << 20
"""Entries recomputed at a time (the index arrays of one chunk)."""


def exact(node: Node, done: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """The values ``node`` must hold given its operands' recorded values (``done``), or None (see above).

    A node that reads its own previous entry (a running quantity over blocks,
    ``attrs["start"]`` its value before the first) is recomputed from its
    *recorded* previous entry, as a running sum is; an operand entry before
    the first reads ``start``.
    """
    if node.op not in KINDS or not node.args:
        return None
    if any(r.node == node.name for r in node.args):
        if _number(node.attrs.get("start")) is None:
            return None
        done = {**done, node.name: node.value}
    v = node.value
    out = np.empty(v.shape, dtype=v.dtype)
    rows = v.shape[0] if v.ndim else 1
    step = max(1, CHUNK // max(1, v.size // max(rows, 1)))
    for start in range(0, rows, step):
        part = _entries(node, done, start, min(rows, start + step))
        if part is None:
            return None
        if v.ndim:
            out[start : start + step] = part
        else:
            out[...] = part
    return out


def _entries(node: Node, done: Mapping[str, np.ndarray], start: int, stop: int) -> np.ndarray | None:
    """The node's expected values for first-axis rows ``start:stop`` (all of a 0-d node)."""
    v = node.value
    shape = (stop - start, *v.shape[1:]) if v.ndim else ()
    grid = {
        a: np.arange(1, n + 1).reshape([-1 if k == d else 1 for k in range(v.ndim)]) + (start if d == 0 else 0)
        for d, (a, n) in enumerate(zip(node.axes, shape, strict=True))
    }
    read = [_gather(r.to_json(), done, grid, shape) for r in node.args]
    if any(g is None for g in read):
        return None
    got = [g for g in read if g is not None]
    if node.op in COPIES:
        covered = sum(ok.astype(np.int64) for _, ok in got)
        if np.any(covered != 1) or any(x.dtype != v.dtype for x, _ in got):
            return None
        out = np.zeros(shape, dtype=v.dtype)
        for x, ok in got:
            np.copyto(out, x, where=ok)
        return out
    before = _number(node.attrs.get("start"))
    if before is not None:  # before the first block: the running quantity's start
        got = [(np.where(ok, x, x.dtype.type(before)), np.ones_like(ok)) for x, ok in got]
    if not all(bool(np.all(ok)) for _, ok in got):
        return None
    return _compute(node, [x for x, _ in got], shape)


def _compute(node: Node, xs: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray | None:
    """One elementwise op or mask over operand values already read entry by entry."""
    op, dt = node.op, node.value.dtype
    with np.errstate(all="ignore"):
        if op in _BINARY and len(xs) == 2 and all(x.dtype == dt for x in xs):
            return np.asarray(_BINARY[op](xs[0], xs[1], dtype=dt))
        if op == RESCALE and len(xs) == 3 and all(x.dtype == dt for x in xs):
            return np.asarray(np.add(np.multiply(xs[0], xs[1], dtype=dt), xs[2], dtype=dt))
        if op in _UNARY and len(xs) == 1 and xs[0].dtype == dt:
            return np.asarray(_UNARY[op](xs[0]), dtype=dt)
        if op == "compare" and len(xs) == 2 and node.attrs.get("sign") in _COMPARE:
            return np.asarray(_COMPARE[node.attrs["sign"]](xs[0], xs[1]), dtype=dt)
        if op == "where" and len(xs) == 3 and xs[1].dtype == dt and xs[2].dtype == dt:
            return np.where(xs[0] != 0, xs[1], xs[2]).astype(dt)
        if op == "masked_fill" and len(xs) == 2 and xs[0].dtype == dt:
            fill = _number(node.attrs.get("fill"))
            return None if fill is None else np.where(xs[1] != 0, dt.type(fill), xs[0]).astype(dt)
        if op == "clamp" and len(xs) == 1 and xs[0].dtype == dt:  # torch.clamp: max(x, lo), then min(·, hi)
            lo, hi = _number(node.attrs.get("min")), _number(node.attrs.get("max"))
            y = xs[0] if lo is None else np.maximum(xs[0], dt.type(lo))
            return np.asarray(y if hi is None else np.minimum(y, dt.type(hi)), dtype=dt)
        if op == "not" and len(xs) == 1:
            return np.asarray(xs[0] == 0, dtype=dt)
        if op == "cast" and len(xs) == 1:
            func = node.attrs.get("func")
            if func == "bool":
                return np.asarray(xs[0] != 0, dtype=dt)
            if func in ("float", "double") and np.dtype(dt) == np.dtype("float32" if func == "float" else "float64"):
                return xs[0].astype(dt)
            return None
        if op in ("tril", "triu") and len(xs) == 1 and len(shape) >= 2 and xs[0].dtype == dt:
            d = node.attrs.get("diagonal")
            if not isinstance(d, int) or isinstance(d, bool):
                return None
            rows = np.arange(shape[-2]).reshape(-1, 1)
            cols = np.arange(shape[-1]).reshape(1, -1)
            keep = cols - rows <= d if op == "tril" else cols - rows >= d
            return np.where(keep, xs[0], np.zeros((), dt)).astype(dt)
    return None


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None


def _gather(
    ref: dict[str, Any], done: Mapping[str, np.ndarray], grid: Mapping[str, np.ndarray], shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The operand entry each reading entry names, and where that entry is in range (None: not followable)."""
    src = done.get(ref["node"])
    index = ref.get("index")
    if src is None or index is None or len(index) != src.ndim or "*" in index:
        return None
    ok = np.ones(shape, dtype=bool)
    pos = []
    for expr, size in zip(index, src.shape, strict=True):
        try:
            i = ids.index_expr(str(expr))(grid)  # type: ignore[arg-type]  # arrays of indices, element by element
            if i is None:
                return None
            at = np.broadcast_to(np.asarray(i, dtype=np.int64), shape)
        except (ValueError, TypeError, OverflowError, ZeroDivisionError, KeyError):
            return None  # arithmetic this cannot evaluate over a whole grid (a modulus by an axis, say)
        ok &= (at >= 1) & (at <= size)
        pos.append(np.clip(at, 1, max(size, 1)) - 1)
    if src.size == 0:
        return (np.zeros(shape, dtype=src.dtype), ok) if not ok.any() else None
    return np.broadcast_to(src[tuple(pos)] if pos else src, shape), ok
