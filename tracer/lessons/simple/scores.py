"""Sections 1 and 2: the inputs, and the focus query's scores written out term by term."""

from __future__ import annotations

import numpy as np

from tracer.present.board import elide
from tracer.present.figures.vectors import vectors
from tracer.present.views.common import FULL_T, TOP, Ctx, rows_table, said, tex
from tracer.present.views.layout import board, chunked, sides
from tracer.present.views.model import Block, Equation, Figure, Section


def inputs(ctx: Ctx) -> Section:
    """The tokens and their embedding vectors, as a table and a figure."""
    s, q, d = ctx.s, ctx.q, ctx.d
    x = ctx.trace.tensor("x")
    table = rows_table(ctx, "inputs-table", said(s("inputs.table_caption")), "x", r"x^{(j)}_{%(k)s}", given=True)
    blocks: list[Block] = [said(s("inputs.intro", d=d, q=q)), table, _vectors_figure(ctx, x)]
    return Section("inputs", s("inputs.title"), tuple(blocks))


def _vectors_figure(ctx: Ctx, x: np.ndarray) -> Figure:
    s, q, t, d = ctx.s, ctx.q, ctx.t, ctx.d
    titles = [s("figures.component", k=k) for k in range(1, min(d, 3) + 1)]
    svg = vectors("fig-inputs", np.asarray(x, dtype=np.float64), ctx.trace.tokens, q, titles)
    if d == 3:
        return Figure("fig-inputs", "fig-inputs", svg, s("inputs.fig_alt_3d", n=t, q=q), s("inputs.fig_caption_3d"))
    if d == 1:
        proj = s("inputs.proj_line")
    elif d == 2:
        proj = s("inputs.proj_plane")
    else:
        proj = s("inputs.proj_first2", rest=d - 2)
    alt = s("inputs.fig_alt_2d", n=t, q=q, proj=proj)
    return Figure("fig-inputs", "fig-inputs", svg, alt, s("inputs.fig_caption_2d", proj=proj))


def dot(ctx: Ctx, i: int, j: int, focus: bool) -> Equation:
    """The dot product omega[i,j] (1-based) written out: factors, products, total, running sums."""
    tr = ctx.trace
    x, p, run = tr.tensor("x"), tr.tensor("omega.p"), tr.tensor("omega.s")
    total = float(tr.tensor("omega")[i - 1, j - 1])
    sid = f"omega[{i},{j}]"
    lhs, definition = sides(tr[sid])
    factors, products, sums = [], [], []
    factor_ids: list[tuple[str, ...]] = []  # the step ids of the numbers each chunk writes: its doors
    product_ids: list[tuple[str, ...]] = []
    for k in elide(ctx.d):
        if k is None:
            factors.append(r"\cdots")
            products.append(r"\cdots")
            sums.append(r"\cdots")
            factor_ids.append(())
            product_ids.append(())
            continue
        a, b = ctx.given(float(x[i - 1, k])), ctx.given(float(x[j - 1, k]))
        factors.append(rf"{tex(a)} \times {tex(b)}")
        factor_ids.append((f"x[{i},{k + 1}]", f"x[{j},{k + 1}]"))
        products.append(tex(ctx.num(float(p[i - 1, j - 1, k]))))
        product_ids.append((f"{sid}.p[{k + 1}]",))
        sums.append(rf"s_{{{k + 1}}} = {ctx.num(float(run[i - 1, j - 1, k]))}")
    note = ctx.s("scores.rounding", n=ctx.decimals) if ctx.rounds(p[i - 1, j - 1], total) else ""
    # the dot product's own form only: a later sum form is what the factors and products write out
    steps = [*definition[:1], chunked(factors), chunked(products), ctx.num(total)]
    doors = [*(None for _ in definition[:1]), factor_ids, product_ids, [(sid,)]]
    return board(f"omega-{i}-{j}", sid, lhs, steps, ctx.s("scores.partial"), sums, note, focus, doors)


def shown_keys(ctx: Ctx) -> list[int]:
    """0-based keys whose terms are written out: all, or the TOP largest weights of the focus query."""
    if ctx.t <= FULL_T:
        return list(range(ctx.t))
    w = ctx.trace.tensor("alpha")[ctx.q - 1]
    order = np.argsort(-np.asarray(w, dtype=np.float64), kind="stable")[:TOP]
    return sorted(int(j) for j in order)


def scores(ctx: Ctx) -> Section:
    """Every score of the focus query as a dot product written out term by term."""
    s, q = ctx.s, ctx.q
    blocks: list[Block] = [said(s("scores.intro", q=q)), said(s("scores.why", q=q)), said(s("scores.each"))]
    if ctx.d > len([k for k in elide(ctx.d) if k is not None]):
        blocks.append(said(s("scores.elided", d=ctx.d), note=True))
    if ctx.t > FULL_T:
        blocks.append(said(s("scores.top_only", t=ctx.t, n=TOP), note=True))
    blocks += [dot(ctx, q, j + 1, True) for j in shown_keys(ctx)]
    return Section("scores", s("scores.title"), tuple(blocks))
