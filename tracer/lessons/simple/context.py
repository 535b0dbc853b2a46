"""Section 4 of the walk-through: the focus query's context vector, component by component, and its figure."""

from __future__ import annotations

import numpy as np

from tracer.lessons.simple.scores import shown_keys
from tracer.present.board import elide
from tracer.present.figures import bars
from tracer.present.figures.marks import sub, sup
from tracer.present.views.common import (
    FULL_T,
    Ctx,
    elided_row,
    gaps,
    index,
    said,
    tex,
    token,
    with_gaps,
)
from tracer.present.views.layout import board, sides
from tracer.present.views.layout import chunked as chunks
from tracer.present.views.model import Block, Equation, Figure, Num, Row, Section, Table

FIG_PARTS = 8
"""The context figure draws at most this many tokens' contributions (the rest as one group)."""
FIG_COMPS = 16
"""The context figure draws at most this many components."""


def _component(ctx: Ctx, k: int, keys: list[int]) -> Equation:
    """z[q,k] written out: weights times inputs, the terms, the total."""
    tr, q = ctx.trace, ctx.q
    a, x, terms = tr.tensor("alpha")[q - 1], tr.tensor("x"), tr.tensor("z.t")[q - 1]
    total = float(tr.tensor("z")[q - 1, k])
    sid = f"z[{q},{k + 1}]"
    more = [r"\cdots"] if len(keys) < ctx.t else []
    factors = [rf"{tex(ctx.num(float(a[j])))} \times {tex(ctx.given(float(x[j, k])))}" for j in keys] + more
    parts = [tex(ctx.num(float(terms[j, k]))) for j in keys] + more
    rounds = not more and ctx.rounds(terms[:, k], total)
    note = ctx.s("context.rounding", cols=str(k + 1), n=ctx.decimals) if rounds else ""
    lhs, formula = sides(tr[sid])
    steps = [*formula, chunks(factors), chunks(parts), ctx.num(total)]
    factor_ids = [(f"alpha[{q},{j + 1}]", f"x[{j + 1},{k + 1}]") for j in keys] + [() for _ in more]
    term_ids = [(f"z[{q}].t[{j + 1},{k + 1}]",) for j in keys] + [() for _ in more]
    doors = [*(None for _ in formula), factor_ids, term_ids, [(sid,)]]  # each number put in opens its step
    return board(f"z-{q}-{k + 1}", sid, lhs, steps, note=note, focus=True, ids=doors)


def context(ctx: Ctx) -> Section:
    """z(q) component by component, its terms as a table, and a figure of how it is built."""
    s, q, tr = ctx.s, ctx.q, ctx.trace
    keys = shown_keys(ctx)
    comps = elide(ctx.d)
    blocks: list[Block] = [said(s("context.intro", q=q))]
    if ctx.t > FULL_T:
        blocks.append(said(s("context.top_only", t=ctx.t, n=len(keys)), note=True))
    blocks += [_component(ctx, k, keys) for k in comps if k is not None]
    terms, z = tr.tensor("z.t")[q - 1], tr.tensor("z")[q - 1]
    head = [Num("j", latex=True), Num(s("inputs.col_token")), Num(rf"\alpha_{{{q}j}}", latex=True)]
    head += [Num(rf"\alpha_{{{q}j}}\, x^{{(j)}}_{{{k + 1}}}", latex=True) if k is not None else Num("⋯") for k in comps]
    rows = []
    for j, missing in gaps(with_gaps(keys, ctx.t), ctx.t):
        if j is None:
            rows.append(elided_row(ctx, missing))
            continue
        cells = [index(j), token(ctx, j), ctx.cell(f"alpha[{q},{j + 1}]", float(tr.tensor("alpha")[q - 1, j]))]
        cells += [
            ctx.cell(f"z[{q}].t[{j + 1},{k + 1}]", float(terms[j, k])) if k is not None else Num("⋯") for k in comps
        ]
        rows.append(Row(tuple(cells), focus=j == q - 1))
    total = [Num(f"z^{{({q})}}", cls="label", latex=True), Num(""), Num("")]
    total += [ctx.cell(f"z[{q},{k + 1}]", float(z[k])) if k is not None else Num("⋯") for k in comps]
    rows.append(Row(tuple(total), total=True))
    notes = []
    bad = [str(k + 1) for k in comps if k is not None and ctx.rounds(terms[:, k], float(z[k]))]
    if bad and ctx.t <= FULL_T:
        notes.append(said(s("context.rounding", cols=", ".join(bad), n=ctx.decimals), note=True))
    blocks.append(Table("context-table", said(s("context.table_caption", q=q)), tuple(head), tuple(rows), tuple(notes)))
    blocks.append(_context_figure(ctx, terms, z))
    return Section("context", said(s("context.title", q=q)), tuple(blocks))


def _context_figure(ctx: Ctx, terms: np.ndarray, z: np.ndarray) -> Figure:
    s, q = ctx.s, ctx.q
    t64, z64 = np.asarray(terms, dtype=np.float64), np.asarray(z, dtype=np.float64)
    d = min(ctx.d, FIG_COMPS)
    if ctx.t <= FIG_PARTS:
        parts, names, others = t64[:, :d], list(ctx.trace.tokens), False
    else:
        top = np.argsort(-np.asarray(ctx.trace.tensor("alpha")[q - 1], dtype=np.float64), kind="stable")[
            : FIG_PARTS - 1
        ]
        keep = sorted(int(j) for j in top)
        rest = np.delete(t64, keep, axis=0).sum(axis=0)
        parts = np.vstack([t64[keep], rest])[:, :d]
        names, others = [ctx.trace.tokens[j] for j in keep] + [s("context.others")], True
    comps = [f"z{sub(str(k + 1))}" for k in range(d)]
    svg = bars.stacked("fig-context", parts, z64[:d], names, comps, s("lesson.bars_total", q=sup(f"({q})")), others)
    caption = s("context.fig_caption", q=q)
    if d < ctx.d:
        caption += " " + s("context.dims_elided", n=d, d=ctx.d)
    return Figure("fig-context", "fig-context", svg, s("context.fig_alt", q=q), said(caption))
