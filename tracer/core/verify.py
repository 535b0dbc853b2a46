"""Check that every recorded value follows from its recorded operands.

A trace file's digest is a plain SHA-256 of its content: it catches a file
damaged by accident, not one edited on purpose (anyone can recompute it).
Editing a value is also a fair teaching move ("what if omega[2,1] were 5?").
Either way the reader deserves to know which numbers do not follow from
their inputs, so :func:`verify` recomputes each node from the operands the
trace itself records, with the op it records:

- ``mul``, ``add``, ``sub``, ``div``, running sums (``acc``, each from the
  *recorded* previous sum), totals (``sum``), ``max`` and ``masked_fill`` are
  single IEEE operations or copies: they must match bit for bit;
- ``exp``, ``cos``, ``sin`` and ``softmax`` come from library kernels (or
  :mod:`tracer.core.exact` and :mod:`tracer.core.trig`): they must match a
  float64 recomputation, ``exp``, ``cos`` and ``sin`` to a few units in the last place, a softmax
  within the bound the maths gives for its longest row and widest spread
  (:func:`tracer.core.bounds.softmax_rel`: a long row's sum, added in any
  order, may move more than a few units);
- ``maxabsdiff`` is recomputed exactly from its two operands (from the
  totals of running sums, their last entry along the summed axis, when it
  reads them, as a captured product's ``check.N`` reads ``N.s``); a bounded
  one (a library result against its loop form) follows when both its
  recorded and its recomputed residual are within the bound it carries;
- layout ops (``view``, ``transpose``, ``cat``, ``stack``, indexing), writes,
  masks (``tril``, ``triu``, comparisons, ``where``) and elementwise ops read
  through index arithmetic are recomputed entry by entry from the operand
  entries their references name (:mod:`tracer.core.recompute`): bit for bit;
- a library's result kept in place of one of those ops (a captured ``@``,
  ``nn.Linear`` with its bias, a fused attention kernel: ``attrs["library"]``)
  added in the kernel's own order, so it follows when it is within the bound
  of its check (the ``maxabsdiff`` that reads it) of the recomputed sums;
- a lesson's matrix form (``mat.omega = x @ x.T``, ``batch.mat.z``: a
  tensor-level library result a bounded ``maxabsdiff`` holds to its loop
  form) follows when each entry is within that check's bound of the loop
  form's entry;
- ``input`` and ``const`` have no operands; any other node whose meaning a
  trace does not spell out is listed as not checked (no lesson has one).

Only the value that breaks the chain is wrong: an edited ``omega[2,1]`` is
listed, and so is every value computed from it that the editor left as it was.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from tracer.core import bounds, ids, recompute
from tracer.core.predict import PREDICTABLE, aligned, predict
from tracer.core.trace import Node, Trace
from tracer.core.verdict import SHOWN, Verification, Wrong

__all__ = ["SHOWN", "Verification", "Wrong", "verify"]

_ULPS = 8  # kernels' exp and softmax agree with float64 to a few units in the last place
_UNARY = {"exp": np.exp, "cos": np.cos, "sin": np.sin, "sqrt": np.sqrt}


def verify(trace: Trace) -> Verification:
    """Recompute every node of ``trace`` from its recorded operands (see the module docstring)."""
    done: dict[str, np.ndarray] = {}
    wrong: list[Wrong] = []
    unchecked: list[str] = []
    flagged: set[str] = set()
    seen: dict[str, Node] = {}
    checked = 0
    partners = _partners(trace)
    bounded = {name: bound for name, (bound, _) in partners.items()}
    for node in trace.nodes:
        bad = _mismatch(node, done, bounded.get(node.name) if "library" in node.attrs else None, seen)
        done[node.name] = node.value
        seen[node.name] = node
        if bad is None:
            if node.op not in ("input", "const"):
                unchecked.append(node.name)
            continue
        checked += 1
        if not bad.any():  # the usual case: no index list to build
            continue
        where = np.argwhere(bad)
        if where.size == 0 and not (bad.ndim == 0 and bool(bad)):
            continue
        if bad.ndim == 0:
            first: list[str] = [node.name]
            count = 1
        else:
            count = len(where)
            first = [ids.render(node.name, node.split, [int(i) + 1 for i in w]) for w in where[:SHOWN]]
        flagged.update(first)
        wrong.append(Wrong(node.name, count, tuple(first)))
    for name in [n for n in unchecked if n in partners]:  # library results held to their loop forms
        bad = _beside(trace.node(name).value, *partners[name], done)
        if bad is None:
            continue
        unchecked.remove(name)
        checked += 1
        if bad.any():
            node = trace.node(name)
            where = np.argwhere(bad)
            first = [ids.render(name, node.split, [int(i) + 1 for i in w]) for w in where[:SHOWN]]
            flagged.update(first)
            wrong.append(Wrong(name, len(where), tuple(first)))
    return Verification(tuple(wrong), tuple(unchecked), checked, frozenset(flagged))


def follows(trace: Trace, name: str) -> bool | None:
    """Whether node ``name``'s values follow from its recorded operands: True, False, or None (not recomputed).

    The per-node half of :func:`verify`, for a caller that asks about one
    node (``explain`` of one of its steps) without recomputing the trace.
    A library result held to its loop form (a bounded partner) is judged by
    :func:`verify` only; here it is None.
    """
    node = trace.node(name)
    done = {n.name: n.value for n in trace.nodes}
    seen = {n.name: n for n in trace.nodes}
    bad = _mismatch(node, done, None, seen) if "library" not in node.attrs else None
    return None if bad is None else not bool(np.any(bad))


def _beside(v: np.ndarray, bound: float, partner: str, done: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """True where a library result is further than ``bound`` from the loop form a check holds it to.

    A lesson's matrix form (``mat.omega = x @ x.T``) is computed by a library
    in an order of its own, so it cannot be recomputed bit for bit; the page's
    check states it is within ``bound`` of the loop form (``omega``), entry by
    entry, and that is what is verified.  None: no such loop form to compare.
    """
    other = done.get(partner)
    if other is None or other.shape != v.shape or other.dtype != v.dtype:
        return None
    return _differs(v, other, bound)


def _partners(trace: Trace) -> dict[str, tuple[float, str]]:
    """Node -> (bound, loop form) for each bounded check of a library result against its loop form."""
    out: dict[str, tuple[float, str]] = {}
    for n in trace.nodes:
        b = n.attrs.get("bound") if n.op == "maxabsdiff" and len(n.args) == 2 else None
        if isinstance(b, int | float) and not isinstance(b, bool):
            out[n.args[0].node] = (float(b), n.args[1].node)
    return out


def _mismatch(
    node: Node, done: Mapping[str, np.ndarray], bound: float | None = None, seen: Mapping[str, Node] | None = None
) -> np.ndarray | None:
    """A boolean array, True where the node's value does not follow (None: not recomputable).

    ``bound``: the node is a library's result, to follow within it; ``seen``:
    the nodes before it, by name (a check reads the totals of running sums).
    """
    v = node.value
    args = [r.to_json() for r in node.args]
    if any(a["node"] not in done and a["node"] != node.name for a in args):
        return None
    if node.op in PREDICTABLE:
        like = v if node.op == "acc" else None
        axes_of = _AxesOf(seen or {})
        guess = predict(node.op, node.axes, v.shape, args, node.attrs, done, v.dtype, like=like, axes_of=axes_of)
        if guess is not None and guess.shape == v.shape:
            return _differs(v, guess, bound)
    if node.op in (*_UNARY, "softmax") and len(args) == 1 and "index" in args[0]:
        src = done[args[0]["node"]]
        over = node.attrs.get("over")
        index = tuple(over if x == "*" else x for x in args[0]["index"]) if over else tuple(args[0]["index"])
        x = aligned(src.astype(np.float64), index, node.axes)
        if x is None or src.dtype != v.dtype:
            return None
        with np.errstate(all="ignore"):
            if node.op in _UNARY:
                ref = _UNARY[node.op](np.broadcast_to(x, v.shape))
            elif over in node.axes:
                ax = node.axes.index(str(over))
                e = np.exp(x - np.max(x, axis=ax, keepdims=True))
                ref = np.broadcast_to(e / np.sum(e, axis=ax, keepdims=True), v.shape)
                return ~_close(v, ref, _softmax_rel(x, ax, v.dtype))
            else:
                return None
        return ~_close(v, ref)
    if node.op == "maxabsdiff" and len(args) == 2 and v.ndim == 0:
        a, b = done[args[0]["node"]], _totals(done[args[1]["node"]], (seen or {}).get(args[1]["node"]))
        if a.shape != b.shape or a.dtype != v.dtype or b.dtype != v.dtype:
            return None
        with np.errstate(all="ignore"):  # two NaNs agree (files written before that rule recorded NaN: accepted)
            gap = np.where(a == b, 0, np.abs(a - b))
            ref = np.max(np.where(np.isnan(a) & np.isnan(b), 0, gap)) if a.size else np.zeros((), v.dtype)
            if a.size and np.isnan(v) and np.isnan(np.max(gap)) and not np.isnan(ref):
                ref = np.max(gap)
        bound = node.attrs.get("bound")
        if isinstance(bound, int | float) and not isinstance(bound, bool) and v <= bound and ref <= bound:
            # A bounded check states "within the bound"; its residual is the kernel's and pages print
            # only the bound, so one recomputed from the values a page shows (loop forms) follows too.
            return np.asarray(False)
        return np.asarray(~_same_bits(v, np.asarray(ref, dtype=v.dtype)))
    copied = recompute.exact(node, done)  # layout, writes, masks, elementwise ops read through index arithmetic
    return None if copied is None else _differs(v, copied, bound)


class _AxesOf(Mapping[str, tuple[str, ...]]):
    """The axes of the nodes seen so far, by name, read from the nodes themselves (no copy per node)."""

    def __init__(self, seen: Mapping[str, Node]) -> None:
        self._seen = seen

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return self._seen[name].axes

    def __iter__(self) -> Iterator[str]:
        return iter(self._seen)

    def __len__(self) -> int:
        return len(self._seen)


def _totals(v: np.ndarray, node: Node | None) -> np.ndarray:
    """The totals of running sums (the last sum along the summed axis), or ``v`` itself.

    A captured library product's check (``check.q_proj``) holds torch's
    result to the left-to-right sums ``q_proj.s``, whose last axis runs over
    the terms: its last entry along that axis is the loop form's total.
    """
    if node is None or node.op != "acc" or not node.axes or node.attrs.get("over") != node.axes[-1]:
        return v
    return v[..., -1] if v.ndim and v.shape[-1] else v


def _differs(v: np.ndarray, again: np.ndarray, bound: float | None) -> np.ndarray:
    """True where ``v`` is not ``again``: bit for bit, or within ``bound`` for a library's result."""
    if bound is None:
        return ~_same_bits(v, again)
    with np.errstate(all="ignore"):
        near = np.abs(v.astype(np.float64) - again.astype(np.float64)) <= bound
    return np.asarray(~(_same_bits(v, again) | near))


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal values, with every NaN equal to every NaN (and -0.0 equal to 0.0, as IEEE compares)."""
    b = b.astype(a.dtype, copy=False)
    with np.errstate(all="ignore"):
        same = np.asarray(a == b)
        if same.all():  # the usual case, in two passes over memory instead of five
            return same
        return np.asarray(same | (np.isnan(a) & np.isnan(b)))


def _softmax_rel(x: np.ndarray, axis: int, dtype: np.dtype) -> float:
    """How far (relatively) a library softmax over rows of ``x`` may be from the exact one, by the maths.

    :func:`tracer.core.bounds.softmax_rel` for the longest row and the widest
    spread of finite inputs: a long row's sum of exponentials, added in any
    order, may be off by more than a few units in the last place.
    """
    with np.errstate(all="ignore"):
        live = np.isfinite(x)
        hi = np.max(np.where(live, x, -np.inf), axis=axis)
        lo = np.min(np.where(live, x, np.inf), axis=axis)
        spread = float(np.max(np.where(np.isfinite(hi - lo), hi - lo, 0.0), initial=0.0))
    n = int(np.max(np.sum(live, axis=axis), initial=1))
    rel = bounds.softmax_rel(n, spread, bounds.LIBRARY_EXP_ULPS, bounds.unit(dtype))
    return max(rel, _ULPS * float(np.finfo(dtype).eps))


def _close(v: np.ndarray, ref: np.ndarray, rel: float | None = None) -> np.ndarray:
    """Within ``rel`` of ``ref`` (default a few units in the last place; infinities and NaNs must match)."""
    fin = np.finfo(v.dtype)
    with np.errstate(all="ignore"):
        w = v.astype(np.float64)
        tol = (_ULPS * float(fin.eps) if rel is None else rel) * np.abs(ref) + float(fin.tiny)
        if rel is not None:  # a softmax: two weights in [0, 1] are never more than 1 apart (inf·0 reads 1 too)
            tol = np.fmin(tol, 1.0)
        near = np.abs(w - ref) <= tol
        rounded = ref.astype(v.dtype)  # a float64 value past the dtype's range is inf there too
        same_special = (np.isinf(w) & (w == rounded)) | (np.isnan(w) & np.isnan(ref))
    return np.asarray(near | same_special)
