"""Write a comparison (:class:`~tracer.compare.result.DiffResult`) for people (text) or machines (JSON).

The text report reads top to bottom: the verdict and tolerance, metadata
changes, node changes (op, formula, inputs, shape), a table of counts per
stage, the root causes, then the first differing steps.  The JSON document
carries the same facts under a stable schema (``docs/diff.md``); its
``schema_version`` changes only when a key is removed or changes meaning.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from tracer.compare.result import Change, DiffResult, StageCount, StepDiff
from tracer.core.fmt import COLUMNS, counted, full, sci

SCHEMA = "attn-trace-diff"
SCHEMA_VERSION = 1
_STEP_HEAD = ("id", "formula", "A", "B", "|A-B|", "tol")
_FORMULA = 1  # the column cut to fit COLUMNS: ids and numbers are never cut
LABELS = frozenset({"tokens", "query", "source", "stages", "n_tokens", "dim", "format_version"})
"""Metadata that names or shows a computation; every other key (``dtype``, ``lesson``, a lesson's
options such as ``overflow``) is a setting it ran under, so a step can differ because of it."""
_STAGE_HEAD = ("stage", "compared", "differing", "only A", "only B", "roots", "max |A-B|")


def text(d: DiffResult) -> str:
    """The human-readable report, ending with a newline."""
    t = d.totals
    settings = [c for c in d.meta if c.subject not in LABELS and not c.subject.startswith("inputs.")]
    if d.equal:
        verdict = f"EQUAL within tolerance ({t.compared:,} steps compared)"
    elif t.differing or t.only_a or t.only_b:
        verdict = f"DIFFERENT: {counted(t.differing, 'step')} differ, {t.only_a:,} only in A, {t.only_b:,} only in B"
        verdict += f", {counted(t.roots, 'root cause')}"
        if settings:  # the first cause to read: every value was computed under it
            verdict += f"\nthe traces were computed with another {', '.join(c.subject for c in settings)}"
    else:  # every value equal: say what does differ, not "0 steps differ"
        what = [f"metadata ({', '.join(c.subject for c in d.meta)})"] if d.meta else []
        what += [f"nodes ({', '.join(dict.fromkeys(c.subject for c in d.nodes))})"] if d.nodes else []
        verdict = f"DIFFERENT in {' and '.join(what)} only: the {t.compared:,} steps compared are equal"
    out = [
        f"A: {d.a_name}",
        f"B: {d.b_name}",
        verdict,
        f"tolerance: |A-B| <= atol + rtol*|B| with rtol={d.rtol:g}, atol={d.atol:g}",
    ]
    if d.meta:
        out += ["", "metadata (A -> B)", *_changes(d.meta, with_field=False)]
    if d.nodes:
        out += ["", "nodes (A -> B)", *_changes(d.nodes, with_field=True)]
    out += ["", *_table(_STAGE_HEAD, [_stage_cells(s) for s in (*d.stages, t)], right=range(1, 7))]
    if d.roots:
        shown = f"first {len(d.roots)} of {t.roots:,}" if t.roots > len(d.roots) else f"{t.roots:,}"
        if settings:
            out += ["", "root causes: first the settings every step was computed with (A -> B)"]
            out += _changes(settings, with_field=False)
        out += ["", f"root causes ({shown}): steps that differ while none of their inputs does"]
        out += _table(_STEP_HEAD, [_step_cells(s) for s in d.roots], right=range(2, 6))
    if d.steps:
        n = t.differing + t.only_a + t.only_b
        shown = f"first {len(d.steps)} of {n:,}" if n > len(d.steps) else f"{n:,}"
        out += ["", f"differing steps ({shown}, in dependency order; * marks a root cause)"]
        out += _table(_STEP_HEAD, [_step_cells(s) for s in d.steps], right=range(2, 6))
    return "\n".join(out) + "\n"


def _changes(changes: Sequence[Change], with_field: bool) -> list[str]:
    width = max(len(c.subject) for c in changes)
    lines = []
    for c in changes:
        head = f"  {c.subject:<{width}}  " + (f"{c.field}: " if with_field else "")
        note = f"  ({c.note})" if c.note else ""
        room = max(12, (COLUMNS - len(head) - len(note) - len(" -> ")) // 2)  # both sides cut alike to fit
        lines.append(f"{head}{_short(c.a, room)} -> {_short(c.b, room)}{note}")
    return lines


def _short(value: Any, limit: int = 60) -> str:
    s = json.dumps(value, ensure_ascii=False, sort_keys=True) if not isinstance(value, str) else repr(value)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _stage_cells(s: StageCount) -> list[str]:
    counts = [f"{n:,}" for n in (s.compared, s.differing, s.only_a, s.only_b, s.roots)]
    return [s.stage, *counts, sci(s.max_abs_diff)]


def _step_cells(s: StepDiff) -> list[str]:
    at = f" at [{','.join(map(str, s.where))}]" if s.where else ""
    mark = "* " if s.root else "  "
    a = "-" if s.a is None else full(s.a)
    b = "-" if s.b is None else full(s.b)
    diff = "only in A" if s.kind == "only_a" else "only in B" if s.kind == "only_b" else _maybe(s.abs_diff)
    return [mark + s.id + at, s.formula, a, b, diff, _maybe(s.tol)]


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: room - 1] + "…"


def _maybe(v: float | None) -> str:
    return "-" if v is None else sci(v)


def _table(head: Sequence[str], rows: list[list[str]], right: range) -> list[str]:
    widths = [max(len(r[i]) for r in [list(head), *rows]) for i in range(len(head))]
    if len(head) > _FORMULA and 2 + sum(widths) + 2 * (len(head) - 1) > COLUMNS:  # cut the formulas, not the ids
        room = max(len(head[_FORMULA]), COLUMNS - 2 - 2 * (len(head) - 1) - sum(widths) + widths[_FORMULA])
        rows = [[_cut(c, room) if i == _FORMULA else c for i, c in enumerate(r)] for r in rows]
        widths[_FORMULA] = max(len(r[_FORMULA]) for r in [list(head), *rows])

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return ("  " + "  ".join(parts)).rstrip()

    return [line(head), *(line(r) for r in rows)]


# -- JSON --------------------------------------------------------------------
def to_json(d: DiffResult) -> dict[str, Any]:
    """The JSON document (see ``docs/diff.md``); non-finite numbers are the strings ``NaN``, ``Infinity``."""
    t = d.totals
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "equal": d.equal,
        "a": d.a_name,
        "b": d.b_name,
        "tolerance": {"rtol": d.rtol, "atol": d.atol},
        "limit": d.limit,
        "summary": {
            **_counts(t),
            "meta_changes": len(d.meta),
            "node_changes": len(d.nodes),
        },
        "stages": [{"stage": s.stage, **_counts(s)} for s in d.stages],
        "meta": [_change(c) for c in d.meta],
        "nodes": [_change(c) for c in d.nodes],
        "roots": [_step(s) for s in d.roots],
        "steps": [_step(s) for s in d.steps],
    }


def dumps(d: DiffResult) -> str:
    """The JSON document as text, keys sorted, ending with a newline."""
    return json.dumps(to_json(d), ensure_ascii=False, sort_keys=True, indent=1, allow_nan=False) + "\n"


def _counts(s: StageCount) -> dict[str, Any]:
    return {
        "compared": s.compared,
        "differing": s.differing,
        "only_a": s.only_a,
        "only_b": s.only_b,
        "roots": s.roots,
        "max_abs_diff": _num(s.max_abs_diff),
    }


def _change(c: Change) -> dict[str, Any]:
    return {"subject": c.subject, "field": c.field, "a": c.a, "b": c.b, "note": c.note}


def _step(s: StepDiff) -> dict[str, Any]:
    return {
        "id": s.id,
        "node": s.node,
        "stage": s.stage,
        "op": s.op,
        "kind": s.kind,
        "formula": s.formula,
        "a": _num(s.a),
        "b": _num(s.b),
        "abs_diff": _num(s.abs_diff),
        "tol": _num(s.tol),
        "root": s.root,
        "where": list(s.where) if s.where else None,
    }


def _num(v: float | None) -> float | str | None:
    if v is None or math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else "Infinity" if v > 0 else "-Infinity"
