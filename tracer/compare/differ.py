"""Compare two traces step by step, matched by id, within float tolerances.

    >>> import tracer
    >>> d = tracer.diff("pinned.json", "today.json")     # paths or Trace objects
    >>> d.equal, d.totals.differing, [s.id for s in d.roots]
    (False, 412, ['x[1,1]'])

Two values are *close* when ``|A - B| <= atol + rtol * |B|`` (numpy's
``isclose``); NaN is close to NaN at the same position, and an infinity only
to the same infinity.  Each node is compared as a whole numpy array, and only
the first ``limit`` differing steps become :class:`StepDiff` rows, so two
traces of T=512, d=64 (71 million steps each) compare in well under a second.

A *root cause* (the "first divergence") is a differing step none of whose
inputs differ: one altered input shows as one cause, not as the hundreds of
steps it flows into.  It is computed per node with boolean masks: each
operand's mask of differing entries is carried through the node's index
expressions (``*`` reduces with *any* over that axis, ``k-1`` shifts by one),
so no Python loop ever runs over elements.

This module is named ``differ`` so that ``tracer.diff`` can be the function.
It imports numpy only (no torch): ``attn-trace diff`` and the pytest plugin
stay light.  The result's data classes live in :mod:`tracer.compare.result`,
the reports are written by :mod:`tracer.compare.diffreport`; both sit below
this module.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

import numpy as np

from tracer.compare import diffreport
from tracer.compare.defaults import DEFAULT_ATOL as DEFAULT_ATOL  # re-exported: the API's defaults
from tracer.compare.defaults import DEFAULT_LIMIT as DEFAULT_LIMIT
from tracer.compare.defaults import DEFAULT_RTOL as DEFAULT_RTOL
from tracer.compare.diffmask import Comparison, carry, compare, first, relayout, scan, self_step, shift
from tracer.compare.result import Change, DiffResult, StageCount, StepDiff
from tracer.core.trace import ELEMENT, Node, Step, Trace

__all__ = ["Change", "DiffResult", "StageCount", "StepDiff", "TraceDiff", "diff"]

_META_ORDER = ("lesson", "dtype", "tokens", "query", "n_tokens", "dim", "source", "stages")
_NODE_FIELDS = ("op", "stage", "axes", "split", "granularity", "args", "symbol", "latex", "text", "attrs")
_ALL = np.ones((), dtype=bool)  # the status of an operand that cannot be matched entry by entry


class TraceDiff(DiffResult):
    """The result of :func:`diff`: the data of :class:`~tracer.compare.result.DiffResult`, and its reports."""

    def text(self) -> str:
        """The human-readable report (see :func:`tracer.compare.diffreport.text`)."""
        return diffreport.text(self)

    def to_json(self) -> dict[str, Any]:
        """The JSON document ``attn-trace diff --format json`` prints (schema in ``docs/diff.md``)."""
        return diffreport.to_json(self)


TraceLike = Trace | str | os.PathLike[str]


def diff(
    a: TraceLike,
    b: TraceLike,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    limit: int = DEFAULT_LIMIT,
) -> TraceDiff:
    """Compare trace ``a`` with trace ``b`` (Trace objects or trace file paths), step by step.

    Values are close when ``|A - B| <= atol + rtol * |B|``.  ``limit`` caps
    how many root causes and differing steps are listed (all are counted).
    A file that cannot be read raises :class:`~tracer.errors.TraceFormatError`.
    """
    for label, tol in (("rtol", rtol), ("atol", atol)):
        if not (math.isfinite(tol) and tol >= 0):
            raise ValueError(f"{label} must be a finite number >= 0, not {tol!r}")
    if limit < 0:
        raise ValueError(f"limit must be >= 0, not {limit!r}")
    ta, va, name_a = _open(a, "A")
    tb, vb, name_b = _open(b, "B")
    result = _Differ(ta, tb, rtol, atol).run(name_a, name_b, va, vb, limit)
    notes = tuple(
        f"{name}: {check.summary()}"
        for src, t, name in ((a, ta, name_a), (b, tb, name_b))
        if not isinstance(src, Trace) and not (check := t.verify()).ok
    )
    return replace(result, notes=notes) if notes else result


def described(t: Trace, which: str) -> str:
    """A side of a comparison that has no file name, named by what it holds.

    ``the first Trace given (lesson 'simple', query 2, float32, 1,689 steps)``:
    a report that read "A: A" would not say which trace was which.
    """
    m = t.meta
    what = f"lesson {m.get('lesson')!r}, query {m.get('query')}, {m.get('dtype')}, {len(t):,} steps"
    return f"{which} Trace given ({what})"


def _open(src: TraceLike, label: str) -> tuple[Trace, Any, str]:
    from tracer.core.serialize import FORMAT_VERSION, from_dict, read_document

    if isinstance(src, Trace):
        return src, FORMAT_VERSION, described(src, "the first" if label == "A" else "the second")
    doc, name = read_document(src)
    return from_dict(doc, name), doc.get("version"), os.fspath(src)


class _Differ:
    """Compares node by node, then carries the changes through the dependency graph to find root causes."""

    def __init__(self, ta: Trace, tb: Trace, rtol: float, atol: float) -> None:
        self.ta, self.tb, self.rtol, self.atol = ta, tb, rtol, atol
        a_names = [n.name for n in ta.nodes]
        self.names = a_names + [n.name for n in tb.nodes if n.name not in set(a_names)]
        self.na = {n.name: n for n in ta.nodes}
        self.nb = {n.name: n for n in tb.nodes}
        self.common: dict[str, tuple[int, ...] | None] = {}  # overlap shape; None: not matched entry by entry
        self.cmp: dict[str, Comparison] = {}  # masks over the overlap
        self.taint: dict[str, np.ndarray | None] = {}  # over the union of shapes
        self.roots: dict[str, np.ndarray] = {}  # over the overlap

    def run(self, name_a: str, name_b: str, va: Any, vb: Any, limit: int) -> TraceDiff:
        for name in self.names:
            self._compare(name)
        if any(c.bad is not None for c in self.cmp.values()):
            for name in self.names:  # recording order: every operand before its readers
                self._trace_changes(name)
        meta = self._meta_changes(va, vb)
        nodes = self._node_changes()
        stages = self._stages()
        roots, steps = self._rows(limit)
        return TraceDiff(name_a, name_b, self.rtol, self.atol, limit, meta, nodes, stages, roots, steps)

    # -- values ------------------------------------------------------------
    def bad(self, name: str) -> np.ndarray | None:
        """Entries of node ``name`` beyond tolerance (over the overlap), or None."""
        c = self.cmp.get(name)
        return None if c is None else c.bad

    def _compare(self, name: str) -> None:
        na, nb = self.na.get(name), self.nb.get(name)
        if na is None or nb is None or na.value.ndim != nb.value.ndim:
            self.common[name] = None
            return
        common = tuple(min(x, y) for x, y in zip(na.value.shape, nb.value.shape, strict=True))
        cut = tuple(slice(0, n) for n in common)
        self.common[name] = common
        self.cmp[name] = compare(na.value[cut], nb.value[cut], self.rtol, self.atol)

    def _trace_changes(self, name: str) -> None:
        """Root causes and carried changes of one node, from its operands' carried changes.

        A value *carries* a change when it differs at all and either is beyond
        tolerance or reads a value that carries one.  A root cause is a value
        beyond tolerance none of whose inputs carries a change: a value that
        drifted within tolerance on its own (another kernel's rounding) does
        not carry, so the step it pushes past tolerance is named instead.
        """
        c, common = self.cmp.get(name), self.common.get(name)
        if c is None or common is None:
            self.taint[name] = _ALL
            return
        if c.ne is None:
            self.taint[name] = None if self._same_shape(name) else self._widen(name, np.zeros(common, dtype=bool))
            return
        na, nb = self.na[name], self.nb[name]
        carried = np.zeros_like(c.ne)  # every mask keeps the values' memory layout: whole passes stay contiguous
        own: tuple[int, int] | None = None
        for ref in dict.fromkeys(na.args + nb.args):
            if ref.node == name:
                own = own or self_step(ref, na.axes)
                continue
            st = self.taint.get(ref.node, _ALL)
            if st is not None:
                m = True if st is _ALL else carry(st, ref, na.axes, common)
                np.logical_or(carried, relayout(m, carried) if isinstance(m, np.ndarray) else m, out=carried)
        base = carried if c.bad is None else np.logical_or(c.bad, carried)
        if own is not None:
            taint = scan(c.ne, base, *own)
            np.logical_or(carried, shift(taint, own[0], -own[1], common[own[0]]), out=carried)
        else:
            taint = np.logical_and(c.ne, base)
        if c.bad is not None:
            self.roots[name] = np.logical_and(c.bad, np.logical_not(carried))
        self.taint[name] = self._widen(name, taint) if taint.any() or not self._same_shape(name) else None

    def _same_shape(self, name: str) -> bool:
        return self.na[name].value.shape == self.nb[name].value.shape

    def _widen(self, name: str, mask: np.ndarray) -> np.ndarray:
        """A mask over the overlap, extended to the union of shapes with True (entries in one trace only)."""
        if self._same_shape(name):
            return mask
        na, nb = self.na[name], self.nb[name]
        out = np.ones(tuple(max(x, y) for x, y in zip(na.value.shape, nb.value.shape, strict=True)), dtype=bool)
        out[tuple(slice(0, n) for n in mask.shape)] = mask
        return out

    # -- structure ---------------------------------------------------------
    def _meta_changes(self, va: Any, vb: Any) -> tuple[Change, ...]:
        ma, mb = self.ta.meta, self.tb.meta
        keys = [k for k in _META_ORDER if k in ma or k in mb]
        keys += sorted((set(ma) | set(mb)) - set(keys))
        out = []
        for k in keys:
            if ma.get(k) != mb.get(k) or (k in ma) != (k in mb):
                note = "missing in B" if k not in mb else "missing in A" if k not in ma else ""
                out.append(Change(k, "value", ma.get(k), mb.get(k), note))
        if va != vb:
            out.append(Change("format_version", "value", va, vb))
        for name in self.names:
            na, nb = self.na.get(name), self.nb.get(name)
            if na is None or nb is None or na.op != "input":
                continue
            bad, same_shape = self.bad(name), na.value.shape == nb.value.shape
            if bad is None and same_shape:
                continue
            n = 0 if bad is None else int(np.count_nonzero(bad))
            note = f"{n} of {bad.size if bad is not None else na.value.size} values differ beyond tolerance"
            out.append(Change(f"inputs.{name}", "value", list(na.value.shape), list(nb.value.shape), note))
        return tuple(out)

    def _node_changes(self) -> tuple[Change, ...]:
        same_dtype = self.ta.meta.get("dtype") == self.tb.meta.get("dtype")
        out = []
        for name in self.names:
            na, nb = self.na.get(name), self.nb.get(name)
            if na is None or nb is None:
                out.append(Change(name, "exists", na is not None, nb is not None))
                continue
            fa, fb = _fields(na), _fields(nb)
            out.extend(Change(name, f, fa[f], fb[f]) for f in _NODE_FIELDS if fa[f] != fb[f])
            if na.value.shape != nb.value.shape:
                out.append(Change(name, "shape", list(na.value.shape), list(nb.value.shape)))
            if same_dtype and na.value.dtype != nb.value.dtype:
                out.append(Change(name, "dtype", str(na.value.dtype), str(nb.value.dtype)))
        return tuple(out)

    # -- counts and rows ---------------------------------------------------
    def _counts(self, name: str) -> tuple[int, int, int, int, int]:
        """(compared, differing, only in A, only in B, roots) for one node."""
        na, nb, common = self.na.get(name), self.nb.get(name), self.common.get(name)
        bad, roots = self.bad(name), self.roots.get(name)
        if common is None or na is None or nb is None:
            tensors = na is not None and nb is not None and ELEMENT not in (na.granularity, nb.granularity)
            if tensors:  # tensor-level steps keep their id whatever their shape
                return 1, 1, 0, 0, 0
            return 0, 0, (na.nsteps if na else 0), (nb.nsteps if nb else 0), 0
        if na.granularity != ELEMENT:
            changed = bad is not None or na.value.shape != nb.value.shape
            return 1, int(changed), 0, 0, int(bool(np.any(roots)) if roots is not None else 0)
        n = math.prod(common)
        differing = 0 if bad is None else int(np.count_nonzero(bad))
        nroots = 0 if roots is None else int(np.count_nonzero(roots))
        return n, differing, na.value.size - n, nb.value.size - n, nroots

    def _stages(self) -> tuple[StageCount, ...]:
        totals: dict[str, list[float]] = {}
        for name in self.names:
            node = self.na.get(name) or self.nb[name]
            row = totals.setdefault(node.stage, [0, 0, 0, 0, 0, 0.0])
            for i, v in enumerate(self._counts(name)):
                row[i] += v
            row[5] = max(row[5], self.cmp[name].big if name in self.cmp else 0.0)
        return tuple(
            StageCount(stage, int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), r[5])
            for stage, r in totals.items()
        )

    def _rows(self, limit: int) -> tuple[tuple[StepDiff, ...], tuple[StepDiff, ...]]:
        roots: list[StepDiff] = []
        steps: list[StepDiff] = []
        for name in self.names:
            if len(roots) >= limit and len(steps) >= limit:
                break
            mask = self.roots.get(name)
            if mask is not None and len(roots) < limit and np.any(mask):
                roots.extend(self._value_rows(name, mask, limit - len(roots), root=True))
            if len(steps) < limit:
                steps.extend(self._node_rows(name, limit - len(steps)))
        return tuple(roots), tuple(steps)

    def _node_rows(self, name: str, k: int) -> list[StepDiff]:
        na, nb, common = self.na.get(name), self.nb.get(name), self.common.get(name)
        rows: list[StepDiff] = []
        bad = self.bad(name)
        tensor = na is not None and na.granularity != ELEMENT
        if na is not None and nb is not None and (bad is not None or (tensor and na.value.shape != nb.value.shape)):
            rows.extend(self._value_rows(name, bad, k, root=self.roots.get(name, False)))
        if tensor and nb is not None:
            return rows[:k]
        for node, trace, kind in ((na, self.ta, "only_a"), (nb, self.tb, "only_b")):
            if node is not None and len(rows) < k:
                rows.extend(self._only_rows(trace, node, common, kind, k - len(rows)))
        return rows[:k]

    def _value_rows(self, name: str, mask: np.ndarray | None, k: int, root: np.ndarray | bool) -> list[StepDiff]:
        """Rows for the first ``k`` entries of ``mask``; ``root`` marks which are root causes."""
        na, nb = self.na[name], self.nb[name]
        if k <= 0:
            return []
        if na.granularity != ELEMENT or nb.granularity != ELEMENT:
            return [self._tensor_row(na, nb, mask, bool(np.any(root)))]
        assert mask is not None
        rows = []
        for index in first(mask, k):
            is_root = root is True or (isinstance(root, np.ndarray) and bool(root[index]))
            a, b = float(na.value[index]), float(nb.value[index])
            step = Step(self.ta, na, index)
            rows.append(self._row(step, "value", a, b, is_root))
        return rows

    def _tensor_row(self, na: Node, nb: Node, bad: np.ndarray | None, root: bool) -> StepDiff:
        step = Step(self.ta, na, ())
        if bad is None or not bad.any():
            return self._row(step, "value", None, None, root)
        where = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
        row = self._row(step, "value", float(na.value[where]), float(nb.value[where]), root)
        return replace(row, where=tuple(i + 1 for i in where))

    def _only_rows(self, trace: Trace, node: Node, common: tuple[int, ...] | None, kind: str, k: int) -> list[StepDiff]:
        if node.granularity != ELEMENT:
            return [self._row(Step(trace, node, ()), kind, *_pair(kind, node.value), root=False)]
        if common == node.value.shape:
            return []
        mask = np.ones(node.value.shape, dtype=bool)
        if common is not None:
            mask[tuple(slice(0, n) for n in common)] = False
        rows = []
        for index in first(mask, k):
            rows.append(self._row(Step(trace, node, index), kind, *_pair(kind, node.value[index]), root=False))
        return rows

    def _row(self, step: Step, kind: str, a: float | None, b: float | None, root: bool) -> StepDiff:
        absd = tol = None
        if a is not None and b is not None:
            absd, tol = abs(a - b), self.atol + self.rtol * abs(b)
        return StepDiff(step.id, step.node.name, step.stage, step.op, kind, step.latex, a, b, absd, tol, root)


def _fields(n: Node) -> dict[str, Any]:
    """The node's fields as its trace file writes them (one description of a node, in ``serialize``)."""
    from tracer.core.serialize import _spec

    return _spec(n)


def _pair(kind: str, value: Any) -> tuple[float | None, float | None]:
    v = float(value) if np.ndim(value) == 0 else None
    return (v, None) if kind == "only_a" else (None, v)
