"""Any node as tables, chosen by its axes: the generic stage report's building blocks.

A node's leading ``h`` (head) and ``b`` (batch) axes are *lead* axes: a node
over heads gets one table per head, and only the first batch entry is shown
(with a note saying whether the others are equal).  The remaining *core* axes
decide the form: ``(i, j)`` a token-by-token matrix with the focus query's row
highlighted, ``(i, …)`` a row per token, ``(i,)`` a column of values, any
other 2-d or 1-d node a plain grid, and scalars a line of the stage's table
of values.  Long axes are elided, with a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from tracer.core import ids, portable
from tracer.core.trace import ELEMENT, Node, Step
from tracer.present.board import elide
from tracer.present.views.common import FULL_T, gaps, index, pick_rows, token
from tracer.present.views.lessonctx import LessonCtx
from tracer.present.views.model import Block, Num, Para, Row, Table

LEAD = ("h", "g", "b", "n")
"""Axes that split a node into sub-blocks (a head, or a key/value group, each) or are shown at their first entry
(the batch ``b``; ``n``, the batch and the heads in one axis, as ``nn.MultiheadAttention`` computes)."""
JOINS = ("concat", "join_heads")
"""Ops whose last axis lays the heads side by side."""


@dataclass(frozen=True)
class Part:
    """One sub-block of a node: 0-based lead indices and a label such as ``head 1``."""

    lead: tuple[int, ...]
    label: str
    anchor: str


def upright(node: Node) -> Node:
    """``node`` with its query and key axes last, the rest in their order: how a matrix is drawn.

    A sequence-first attention (labml's scores ``(i, j, b, h)``) is drawn as
    every other, one (i, j) matrix per head.  Only the drawing's layout
    changes: the node keeps its name, and a node without both ``i`` and
    ``j``, or with them last already, comes back as it is.
    """
    order = upright_order(node)
    if order is None:
        return node
    return replace(node, axes=tuple(node.axes[p] for p in order), value=np.transpose(node.value, order))


def upright_order(node: Node) -> list[int] | None:
    """The axes permutation :func:`upright` applies (to the node, or to anything laid out like it), or None."""
    if "i" not in node.axes or "j" not in node.axes or node.axes[-2:] == ("i", "j"):
        return None
    rest = [p for p, a in enumerate(node.axes) if a not in ("i", "j")]
    return [*rest, node.axes.index("i"), node.axes.index("j")]


def lead_axes(node: Node) -> tuple[str, ...]:
    """The node's leading head/batch axes."""
    out: list[str] = []
    for a in node.axes:
        if a not in LEAD or a in out:
            break
        out.append(a)
    return tuple(out)


def parts(ctx: LessonCtx, node: Node) -> Iterator[Part]:
    """Each head of ``node`` (every head, the first batch entry).

    A head axis of size one is no head of its own: a mask viewed as
    ``(1, 1, T, T)`` is broadcast over every head, so its one matrix is not
    labelled "Head 1".
    """
    lead = lead_axes(node)
    axis = next((a for a in ("h", "g") if a in lead and node.sizes[a] > 1), "")
    label = {"h": "lesson.head", "g": "lesson.group"}.get(axis, "")
    for h in range(node.sizes[axis] if axis else 1):
        idx = tuple(h if a == axis else 0 for a in lead)
        yield Part(idx, ctx.s(label, **{axis: h + 1}) if axis else "", f"-{axis}{h + 1}" if axis else "")


def anchor(name: str) -> str:
    """An HTML id from a node name."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def symbol(node: Node) -> str:
    """LaTeX of one entry with its index placeholders (``\\alpha_{<i,j>}``): the node's symbol.

    Empty when the symbol has no placeholders to fill (a constant such as ``\\sqrt{d_k}``) or the
    node names no entry (a whole matrix, ``Q = X W``).
    """
    return node.symbol if "<" in node.symbol else ""


def letters(node: Node, bound: dict[str, int] | None = None) -> str:
    """The node's formula with the ``bound`` axes filled in and the others written as letters."""
    return ids.fill(node.latex, bound or {}, node.sizes)


def caption(ctx: LessonCtx, node: Node, part: Part) -> Para:
    """The narrative's caption of ``node`` (else its formula as maths), with the head it shows."""
    text = ctx.text(node).caption or (f"${letters(node)}$" if node.latex else "")
    if part.label:
        text = ctx.s("lesson.head_caption", head=part.label, caption=text)
    return Para(text, math=True)


def header(node: Node, axis: str, n: int) -> Num:
    """Header of column ``n`` (0-based) along ``axis``: the entry's symbol with that index (``\\alpha_{i1}``)."""
    sym = symbol(node)
    if not sym:
        return Num(str(n + 1))
    return Num(ids.fill(sym, {axis: n + 1}, node.sizes), latex=True)


def cell(ctx: LessonCtx, node: Node, full: tuple[int, ...]) -> Num:
    """The cell of entry ``full`` (0-based) of ``node``: its step id when entries are steps."""
    v = float(node.value[full])
    sid = (
        ids.render(node.name, node.split, [i + 1 for i in full])
        if node.granularity == ELEMENT
        else moved(ctx, node, full)
    )
    text = ctx.value(node, v)
    hide = ctx.hidden(node)
    masked = (node.op in ("max", "maximum") and np.isneginf(v)) or (hide is not None and bool(hide[full]))
    return Num(text, sid, "masked" if masked else ("" if np.isfinite(v) else "bad"))


def moved(ctx: LessonCtx, node: Node, full: tuple[int, ...]) -> str:
    """The step an entry of a layout node (heads split or joined, recorded whole) shows: its one source entry.

    Such a node computes nothing: each entry is an entry of its input, found
    through the node's index expressions, so that entry's step is the door
    the cell opens.  Empty when the entry does not come from exactly one step.
    """
    src = Step(ctx.trace, node, full).inputs
    return src[0] if len(src) == 1 and src[0] in ctx.trace and ctx.trace[src[0]].is_element else ""


def pieces(ctx: LessonCtx, node: Node) -> tuple[str, int]:
    """How the last axis of ``node`` lays sub-blocks side by side: (``h`` or ``g``, how many), or ("", 0).

    Read from the trace, never from the lesson's settings: a joined node takes
    the head axis of the node it joins; a node about to be split takes the
    lead axis of the ``split_heads`` step that reads it (so the keys of
    grouped-query attention are laid out in groups, the queries in heads).
    """
    if node.op in JOINS:
        for ref in node.args:
            src = ctx.trace.node(ref.node)
            axis = next((a for a in src.axes if a in ("h", "g")), "")
            if axis:
                return axis, src.sizes[axis]
        return "h", int(ctx.trace.meta.get("heads", 0) or 0)
    for n in ctx.trace.nodes:
        if n.op == "split_heads" and any(r.node == node.name for r in n.args) and n.axes[0] in ("h", "g"):
            return n.axes[0], n.sizes[n.axes[0]]
    return "", 0


def head_labels(ctx: LessonCtx, node: Node, axis: str) -> list[str]:
    """Column labels ``1 · head 1`` (``1 · group 1``) when ``axis`` lays heads (groups) side by side."""
    kind, count = pieces(ctx, node)
    size = node.sizes[axis]
    if count > 1 and size % count == 0 and axis == node.axes[-1]:
        w = size // count
        key = "lesson.head_col" if kind == "h" else "lesson.group_col"
        return [ctx.s(key, c=c + 1, n=c // w + 1) for c in range(size)]
    return []


def node_blocks(ctx: LessonCtx, node: Node, stage: str) -> list[Block]:
    """Tables showing ``node`` (one per head); scalars are left to :func:`values_table`."""
    lead = lead_axes(node)
    core = node.axes[len(lead) :]
    if not core:
        return []
    out: list[Block] = []
    for part in parts(ctx, node):
        out.append(_table(ctx, node, core, part, f"{stage}-{anchor(node.name)}{part.anchor}"))
    notes = _batch_note(ctx, node, lead)
    return out + notes


def row_offset(ctx: LessonCtx, node: Node) -> int:
    """How many tokens come before the node's first row (a KV cache step's new tokens: ``attrs["row_offset"]``).

    0 unless the trace says so with a whole number that keeps every row among
    the tokens (a trace file is untrusted: anything else is ignored).
    """
    off = node.attrs.get("row_offset", 0)
    if isinstance(off, bool) or not isinstance(off, int) or off < 0 or off + node.sizes.get("i", 0) > ctx.t:
        return 0
    return off


def _batch_note(ctx: LessonCtx, node: Node, lead: tuple[str, ...]) -> list[Block]:
    """Said once per page when every batch sample is the same; for a node whose samples differ, said for it."""
    if "b" not in lead or node.sizes["b"] < 2:
        return []
    v = np.moveaxis(np.asarray(node.value), lead.index("b"), 0)
    if not all(np.array_equal(v[0], v[n], equal_nan=True) for n in range(1, v.shape[0])):
        what = ctx.text(node).alt or caption(ctx, node, Part((), "", "")).text  # a noun phrase, not a sentence
        return [Para(ctx.s("lesson.batch_differ", n=node.sizes["b"], node=what), note=True, math=True)]
    if "batch" in ctx.said:
        return []
    ctx.said.add("batch")
    return [Para(ctx.s("lesson.batch_same", n=node.sizes["b"]), note=True)]


def _table(ctx: LessonCtx, node: Node, core: tuple[str, ...], part: Part, anchor_id: str) -> Table:
    q = ctx.q - 1
    tokens = core[0] == "i" and node.sizes["i"] == ctx.t  # one row per token (a cache's one new query is not)
    if tokens and len(core) > 2:  # a sum's parts: the focus query's slice
        fixed = (*part.lead, q, *([0] * (len(core) - 3)))
        return _grid(ctx, node, fixed, core[-2:], part, anchor_id, sliced=True)
    if tokens:
        return _token_rows(ctx, node, core, part, anchor_id)
    fixed = (*part.lead, *([0] * max(0, len(core) - 2)))
    return _grid(ctx, node, fixed, core[-2:], part, anchor_id)


def _columns(ctx: LessonCtx, node: Node, axis: str | None) -> tuple[list[int | None], list[Num]]:
    """The columns shown along ``axis`` (None: a single column of values) and every column's header."""
    if axis is None:
        sym = symbol(node)
        return [None], [Num(ids.fill(sym, {}, node.sizes), latex=True) if sym else Num(ctx.s("lesson.col_value"))]
    size = node.sizes[axis]
    cols = elide(size, keep=FULL_T, head=6, tail=3)
    joined = head_labels(ctx, node, axis)
    return cols, [Num(joined[c]) if joined else header(node, axis, c) for c in range(size)]


def _heads(cols: list[int | None], labels: list[Num]) -> list[Num]:
    return [labels[c] if c is not None else Num("⋯") for c in cols]


def _token_rows(ctx: LessonCtx, node: Node, core: tuple[str, ...], part: Part, anchor_id: str) -> Table:
    axis = core[1] if len(core) > 1 else None
    cols, labels = _columns(ctx, node, axis)
    shown = labels if axis is None else _heads(cols, labels)
    head = [Num(core[0], latex=True), Num(ctx.s("inputs.col_token")), *shown]
    rows: list[Row] = []
    for i, missing in gaps(pick_rows(ctx.t, ctx.q), ctx.t):
        if i is None:
            rows.append(Row(elided=ctx.s("common.elided_rows", n=missing)))
            continue
        at = (*part.lead, i)
        cells = [
            cell(ctx, node, at if c is None else (*at, c)) if c is not None or axis is None else Num("⋯") for c in cols
        ]
        rows.append(Row((index(i), token(ctx, i), *cells), focus=i == ctx.q - 1))
    notes = (Para(ctx.s("lesson.elided"), note=True),) if ctx.t > FULL_T or len(cols) < len(labels) else ()
    return Table(anchor_id, caption(ctx, node, part), tuple(head), tuple(rows), notes)


def _grid(
    ctx: LessonCtx,
    node: Node,
    fixed: tuple[int, ...],
    axes: tuple[str, ...],
    part: Part,
    anchor_id: str,
    sliced: bool = False,
) -> Table:
    if len(axes) == 1:
        cols, labels = _columns(ctx, node, axes[0])
        cells = [cell(ctx, node, (*fixed, c)) if c is not None else Num("⋯") for c in cols]
        return Table(anchor_id, caption(ctx, node, part), tuple(_heads(cols, labels)), (Row(tuple(cells)),))
    r_axis, c_axis = axes
    cols, labels = _columns(ctx, node, c_axis)
    head = [Num(r_axis, latex=True), *_heads(cols, labels)]
    rows = []
    first = row_offset(ctx, node) + 1 if r_axis == "i" else 1  # a cache step's rows are named by token position
    for r in elide(node.sizes[r_axis], keep=FULL_T, head=6, tail=3):
        if r is None:
            rows.append(Row(elided=ctx.s("lesson.elided")))
            continue
        cells = [cell(ctx, node, (*fixed, r, c)) if c is not None else Num("⋯") for c in cols]
        rows.append(Row((Num(str(r + first), cls="label"), *cells)))
    notes = (Para(ctx.s("lesson.slice", q=ctx.q), note=True),) if sliced else ()
    return Table(anchor_id, caption(ctx, node, part), tuple(head), tuple(rows), notes)


def values_table(ctx: LessonCtx, nodes: list[Node], anchor_id: str, section: int, title: str = "") -> Table | None:
    """One table for a stage's scalars: constants, and the checks that compare two forms.

    Each row says what the number is in the narrative's words; the step id
    rides on the value cell (a tooltip and a link for ``explain``).  The
    caption names the section by its ``title`` (else its number); the first
    table that holds a bounded check says once what the bound means, quoting
    its own first bound (``≤ 1.6e-06``), never a made-up one.
    """
    rows = []
    for node in nodes:
        if node.axes:
            continue
        v = float(node.value)
        text = portable.check_text(node, ctx.decimals) if node.op == "maxabsdiff" else ctx.value(node, v)
        value = Num(text, node.name, "" if np.isfinite(v) else "bad")
        what = caption(ctx, node, Part((), "", ""))
        rows.append(Row((Num(what.text, math=True), value)))
    if not rows:
        return None
    head = (Num(ctx.s("lesson.col_what")), Num(ctx.s("lesson.col_value")))
    bounds = [r.cells[1].text for r in rows if r.cells[1].text.startswith("≤")]
    named = title or str(section)
    said = Para(ctx.s("lesson.values_caption", title=named), math=True)
    if "bound" not in ctx.said and bounds:  # said once, where it applies, with a bound the table shows
        note = Para(ctx.s("lesson.bound_note", bound=bounds[0], dtype=ctx.trace.dtype), math=True)
        text = ctx.s("lesson.values_caption_bound", title=named, bound=bounds[0])
        said = Para(text, math=True, notes=(("bound", note),))  # the machine-dependent part: a footnote
        ctx.said.add("bound")
    return Table(anchor_id, said, head, tuple(rows))
