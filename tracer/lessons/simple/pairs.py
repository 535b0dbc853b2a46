"""Sections 5 and 6 of the walk-through: every query at once (heatmaps, matrix form, each dot product), the recap."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from tracer.core import ids, portable
from tracer.lessons.simple.scores import dot
from tracer.present.views import alts
from tracer.present.views.common import (
    FULL_T,
    HEAT_BLOCKS,
    Ctx,
    heatmap_svg,
    index,
    rows_table,
    said,
    token,
)
from tracer.present.views.model import Block, Figure, Formula, Group, Num, Para, Row, Section, Table


def _heatmap(ctx: Ctx, node: str, links: bool) -> tuple[str, bool]:
    """SVG of a T x T matrix; True when it had to be averaged over blocks."""
    t = ctx.t
    hrefs = [[f"#pair-{i + 1}-{j + 1}" for j in range(t)] for i in range(t)] if links and t <= FULL_T else None

    def doors() -> list[list[str]]:  # each cell's step, written only if the cells are drawn
        return [[f"{node}[{i + 1},{j + 1}]" for j in range(t)] for i in range(t)]

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
