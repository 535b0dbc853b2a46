"""Section 3: four normalizations side by side, and the overflow that the stable form avoids."""

from __future__ import annotations

import numpy as np

from tracer.core import portable
from tracer.present.figures import bars
from tracer.present.overflow import MAX_POWER, Overflow, recorded
from tracer.present.views.common import Ctx, elided_row, gaps, index, pick_rows, said, token
from tracer.present.views.model import Block, Figure, Formula, Num, Para, Row, Section, Table

# (node of the per-key column, node of its sum or "" for none)
COLUMNS = (
    ("omega", "div.sum"),
    ("div.alpha", "div.alpha_sum"),
    ("naive.exp", "naive.sum"),
    ("naive.alpha", "naive.alpha_sum"),
    ("stable.shift", ""),
    ("stable.exp", "stable.sum"),
    ("alpha", "alpha_sum"),
    ("torch.alpha", "torch.alpha_sum"),
)
OVERFLOW_COLUMNS = (
    ("scaled.omega", ""),
    ("scaled.naive.exp", "scaled.naive.sum"),
    ("scaled.naive.alpha", "scaled.naive.alpha_sum"),
    ("scaled.stable.shift", ""),
    ("scaled.stable.exp", "scaled.stable.sum"),
    ("scaled.alpha", "scaled.alpha_sum"),
)


def symbol(ctx: Ctx, node: str) -> str:
    """The LaTeX symbol of a column: the symbol of the query's row, its key index a letter (``\\alpha_{2j}``)."""
    return ctx.trace[f"{node}[{ctx.q}]"].symbol


def _table(ctx: Ctx, anchor: str, caption: str | Para, cols: list[tuple[str, str]], rows: list[int | None]) -> Table:
    """The query's row of each column node, one table row per key, and a row of sums."""
    tr, q = ctx.trace, ctx.q
    head = [Num("j", latex=True), Num(ctx.s("inputs.col_token"))]
    head += [Num(symbol(ctx, node), latex=True) for node, _ in cols]
    out = []
    for j, missing in gaps(rows, ctx.t):
        if j is None:
            out.append(elided_row(ctx, missing))
            continue
        cells = [index(j), token(ctx, j)]
        cells += [ctx.cell(f"{node}[{q},{j + 1}]", float(tr.tensor(node)[q - 1, j])) for node, _ in cols]
        out.append(Row(tuple(cells), focus=j == q - 1))
    sums = [Num(ctx.s("norm.col_sum"), cls="label"), Num("")]
    sums += [ctx.cell(f"{total}[{q}]", float(tr.tensor(total)[q - 1])) if total else Num("") for _, total in cols]
    out.append(Row(tuple(sums), total=True))
    notes = []
    if all(r is not None for r in rows):
        bad = [
            f"${symbol(ctx, node)}$"
            for node, total in cols
            if total and ctx.rounds(tr.tensor(node)[q - 1], float(tr.tensor(total)[q - 1]))
        ]
        if bad:
            notes.append(Para(ctx.s("norm.rounding", cols=", ".join(bad), n=ctx.decimals), note=True, math=True))
    return Table(anchor, caption, tuple(head), tuple(out), tuple(notes))


def normalize(ctx: Ctx) -> Section:
    """The focus row's scores turned into weights four ways, with a comparison figure."""
    s, q, tr = ctx.s, ctx.q, ctx.trace
    blocks: list[Block] = [
        said(s("norm.intro", q=q)),
        said(s("norm.div")),
        Formula("formula-div", tr[f"div.alpha[{q}]"].latex),
        said(s("norm.naive")),
        Formula("formula-naive", tr[f"naive.alpha[{q}]"].latex),
        said(s("norm.stable")),
        Formula("formula-max", tr[f"stable.max[{q}]"].latex),
        Formula("formula-stable", tr[f"alpha[{q}]"].latex),
        said(s("norm.torch")),
        Formula("formula-torch", tr[f"torch.alpha[{q}]"].latex),
        _table(ctx, "norm-table", s("norm.table_caption"), list(COLUMNS), list(range(ctx.t))),
        said(s("norm.max_note", q=q, m=ctx.num(float(tr.tensor("stable.max")[q - 1]))), note=True),
    ]
    series = [
        (s(f"norm.s_{key}"), np.asarray(tr.tensor(node)[q - 1], dtype=np.float64))
        for key, node in (("div", "div.alpha"), ("naive", "naive.alpha"), ("stable", "alpha"), ("torch", "torch.alpha"))
    ]
    svg = bars.grouped("fig-weights", tr.tokens, q, series, s("norm.ylabel"))
    blocks.append(Figure("fig-weights", "fig-weights", svg, s("norm.fig_alt", n=ctx.t, q=q), s("norm.fig_caption")))
    checks = s(
        "norm.checks",
        naive=portable.check_text(tr.node("check.naive"), ctx.decimals),
        torch=portable.check_text(tr.node("check.torch"), ctx.decimals),
    )
    # what the bound says about the tool (library kernels, machines) is a footnote, not the text
    blocks.append(Para(checks, math=True, notes=(("bound", said(s("norm.checks_note", dtype=tr.dtype))),)))
    return Section("normalize", s("norm.title"), tuple(blocks))


def overflow(ctx: Ctx, ov: Overflow | None) -> Section:
    """The naive softmax on inputs scaled until exp overflows, beside the stable softmax (stage ``overflow``)."""
    s, q, tr = ctx.s, ctx.q, ctx.trace
    if ov is None:
        if not recorded(tr):  # a trace file from before the stage was recorded
            return Section("overflow", s("overflow.title"), (said(s("overflow.retrace")),))
        top = float(np.max(tr.tensor("omega")[q - 1]))
        return Section("overflow", s("overflow.title"), (said(s("overflow.none", max=MAX_POWER, m=ctx.num(top))),))
    lim = ctx.num(ov.limit)
    c = f"{ov.factor:,}"
    blocks: list[Block] = [
        said(s("overflow.intro", c=c, c2=f"{ov.factor**2:,}", m=ctx.num(ov.top), dtype=tr.dtype, limit=lim)),
        said(s("overflow.factor", c=c, limit=lim), note=True),
        _table(ctx, "overflow-table", s("overflow.table_caption", c=c), list(OVERFLOW_COLUMNS), pick_rows(ctx.t, q)),
    ]
    exps = tr.tensor("scaled.naive.exp")[q - 1]
    naive = tr.tensor("scaled.naive.alpha")[q - 1]
    total = ctx.num(float(tr.tensor("scaled.alpha_sum")[q - 1]))
    counts = s("overflow.counts", inf=int(np.isinf(exps).sum()), t=ctx.t, nan=int(np.isnan(naive).sum()), sum=total)
    blocks.append(said(counts))
    return Section("overflow", s("overflow.title"), tuple(blocks))
