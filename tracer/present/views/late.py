"""Sections 4 to 6: the context vector, every query at once, and the recap."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from tracer.core import ids, portable
from tracer.present.board import elide
from tracer.present.figures import bars
from tracer.present.figures.marks import sub, sup
from tracer.present.views import alts
from tracer.present.views.common import (
    FULL_T,
    HEAT_BLOCKS,
    Ctx,
    elided_row,
    gaps,
    heatmap_svg,
    index,
    rows_table,
    said,
    tex,
    token,
    with_gaps,
)
from tracer.present.views.early import dot, shown_keys
from tracer.present.views.layout import board, sides
from tracer.present.views.layout import chunked as chunks
from tracer.present.views.model import Block, Equation, Figure, Formula, Group, Num, Para, Row, Section, Table

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


def _heatmap(ctx: Ctx, node: str, links: bool) -> tuple[str, bool]:
    """SVG of a T x T matrix; True when it had to be averaged over blocks."""
    t = ctx.t
    hrefs = [[f"#pair-{i + 1}-{j + 1}" for j in range(t)] for i in range(t)] if links and t <= FULL_T else None
    doors = [[f"{node}[{i + 1},{j + 1}]" for j in range(t)] for i in range(t)]
    return heatmap_svg(ctx, f"fig-{node}", ctx.trace.tensor(node), hrefs, doors=doors)


def _matrix_table(ctx: Ctx, node: str, caption: str | Para) -> Table:
    m = ctx.trace.tensor(node)
    head = [Num("i", latex=True), Num(ctx.s("inputs.col_token"))] + [Num(str(j + 1)) for j in range(ctx.t)]
    rows = [
        Row(
            (index(i), token(ctx, i), *[ctx.cell(f"{node}[{i + 1},{j + 1}]", float(v)) for j, v in enumerate(m[i])]),
            focus=i == ctx.q - 1,
        )
        for i in range(ctx.t)
    ]
    return Table(f"{node}-table", caption, tuple(head), tuple(rows))


def pairs(ctx: Ctx) -> Section:
    """Every query at once: heatmaps, all context vectors, matrix form and its check."""
    s, q, t, tr = ctx.s, ctx.q, ctx.t, ctx.trace
    blocks: list[Block] = [said(s("pairs.intro", q=q, t=t))]
    omega_svg, small = _heatmap(ctx, "omega", links=True)
    alpha_svg, _ = _heatmap(ctx, "alpha", links=False)
    if small:
        b = math.ceil(t / HEAT_BLOCKS)
        key = "pairs.downsampled" if b > 1 else "pairs.unannotated"
        blocks.append(said(s(key, t=t, b=b), note=True))
    elif t <= FULL_T:
        blocks.append(replace(said(s("pairs.click")), interactive=True))
    omega_cap, alpha_cap = said(s("pairs.omega_caption")), said(s("pairs.alpha_caption"))
    omega_alt, alpha_alt = (alts.heat(ctx, s(f"pairs.{n}_alt"), tr.tensor(n)) for n in ("omega", "alpha"))
    blocks.append(Figure("fig-omega", "fig-omega", omega_svg, omega_alt, omega_cap))
    blocks.append(Figure("fig-alpha", "fig-alpha", alpha_svg, alpha_alt, alpha_cap))
    if t <= FULL_T:
        blocks.append(_matrix_table(ctx, "alpha", said(s("pairs.alpha_table_caption"))))
    blocks.append(rows_table(ctx, "z-table", said(s("pairs.z_caption")), "z", r"z^{(i)}_{%(k)s}", row="i"))
    blocks.append(said(s("pairs.matrix")))
    blocks.append(
        Formula("formula-matrix", r",\qquad ".join(tr.node(n).latex for n in ("mat.omega", "mat.alpha", "mat.z")))
    )
    checks = {n: tr.node(f"check.{n}") for n in ("omega", "alpha", "z")}
    eps = float(np.finfo(np.dtype(tr.dtype)).eps)
    scale = max(1.0, float(np.max(np.abs(tr.tensor("omega")))))
    # a check carries the bound the maths fixes; an older trace file without one gets a rough tolerance
    ok = all(
        portable.within(c) if portable.bound(c) is not None else float(c.value) <= 64 * eps * scale
        for c in checks.values()
    )
    shown = {n: portable.check_text(c, ctx.decimals) for n, c in checks.items()}
    if ok:  # why the exact differences vary and the bounds do not is about the tool: a footnote
        agree = said(s("pairs.agree", dtype=tr.dtype))
        blocks.append(Para(s("pairs.checks", **shown), math=True, notes=(("order", agree),)))
    else:
        blocks.append(said(s("pairs.checks_differ", **shown)))
        blocks.append(said(s("pairs.differ", dtype=tr.dtype), note=True))
    if t <= FULL_T:
        eqs = []
        for i in range(1, t + 1):
            for j in range(1, t + 1):
                e = dot(ctx, i, j, i == q)
                eqs.append(replace(e, anchor=f"pair-{i}-{j}", extra_label="", extra=()))
        blocks.append(Group("pairs-expansions", s("pairs.expansions"), tuple(eqs)))
    else:
        blocks.append(said(s("pairs.expansions_focus_only", t=t), note=True))
    return Section("pairs", s("pairs.title"), tuple(blocks))


def recap(ctx: Ctx) -> Section:
    """The formulas of the lesson, general form."""
    s, tr = ctx.s, ctx.trace

    def general(node: str) -> str:
        n = tr.node(node)
        return ids.fill(n.latex, {}, n.sizes)

    blocks: list[Block] = [
        said(s("recap.intro")),
        Formula("recap-score", general("omega"), s("recap.score")),
        Formula("recap-max", general("stable.max"), s("recap.max")),
        Formula("recap-weight", general("alpha"), s("recap.weight")),
        Formula("recap-context", general("z"), s("recap.context")),
        Formula(
            "recap-matrix", r",\qquad ".join(general(n) for n in ("mat.omega", "mat.alpha", "mat.z")), s("recap.matrix")
        ),
    ]
    return Section("recap", s("recap.title"), tuple(blocks))
