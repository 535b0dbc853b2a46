"""The focus query's numbers written out, and the figures, for any node (generic stage report).

:func:`written` writes each focus-query entry of a node the way a teacher
writes it on the board: the formula, the numbers that go in (the factors of
each product), the terms, the total, and the running sums, with a note (once
a page, at the first sum it concerns) when the rounded terms do not add up to
the rounded total.  :func:`heatmaps` and :func:`bars` draw a node's (…, i, j)
matrix and a weighted sum's contributions, one figure per head.
"""

from __future__ import annotations

from functools import partial
from itertools import product

import numpy as np

from tracer.core import ids
from tracer.core.formula import steps as split_steps
from tracer.core.trace import ELEMENT, Node, Step, Trace
from tracer.present.board import MAX_TERMS, elide
from tracer.present.board import terms as shown_terms
from tracer.present.figures.bars import stacked
from tracer.present.figures.marks import sup
from tracer.present.views import alts
from tracer.present.views.common import FULL_T, TOP, alone, heatmap_svg, tex
from tracer.present.views.layout import board, chunked, sides
from tracer.present.views.lessonctx import LessonCtx
from tracer.present.views.model import Block, Equation, Figure, Para
from tracer.present.views.nodes import Part, anchor, caption, lead_axes, parts, row_offset, upright, upright_order

SIGNS = {"mul": r"\times", "sub": "-", "add": "+"}
"""LaTeX of the binary ops written out inline."""
FIG_PARTS = 8
"""The contributions figure draws at most this many tokens (the rest as one group)."""


def row(ctx: LessonCtx, node: Node) -> int:
    """The 1-based query row written out: the narrative's ``row`` when the trace has it, else the focus query."""
    want = ctx.text(node).row
    return want if 1 <= want <= ctx.t else ctx.q


def focus_steps(ctx: LessonCtx, node: Node) -> list[Step]:
    """The node's entries for the row written out: every head, the first batch entry, the first keys when many."""
    choices = []
    for a, size in zip(node.axes, node.value.shape, strict=True):
        if a == "i":
            choices.append([min(row(ctx, node), size) - 1])  # a cache's one new query: its only row
        elif a == "b":
            choices.append([0])
        elif a == "j" and size > FULL_T:
            choices.append(list(range(TOP)))
        else:
            choices.append([k for k in elide(size, keep=FULL_T) if k is not None])
    return [ctx.trace[_id(node, idx)] for idx in product(*choices)]


def _id(node: Node, idx: tuple[int, ...]) -> str:
    return ids.render(node.name, node.split, [i + 1 for i in idx])


def _val(ctx: LessonCtx, step: Step) -> str:
    v = float(step.value)
    return tex(ctx.value(step.node, v))


def _cut(items: list[str]) -> list[str]:
    return shown_terms(items, r"\cdots")


def _cut_ids(items: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The step ids of the chunks :func:`_cut` keeps: none for the ellipsis."""
    return [items[k] if k is not None else () for k in elide(len(items))]


def _running_sums(trace: Trace, step: Step, terms: list[Step]) -> list[Step]:
    """The running sum after each term of a contraction's total (its ``partials`` node, at the term's index).

    Only for sums of recorded products or weighted terms (``omega.p``, ``z.t``):
    a row total of another node's values has no products to write out first.
    """
    partials = step.node.attrs.get("partials")
    if not partials or not all(t.node.name.startswith(f"{step.node.name}.") for t in terms) or not step.node.args:
        return []
    node = trace.node(str(partials))
    # the running sums may be laid out in another axis order than the terms (a backward total summed over heads
    # keeps the heads last): a term's index is read by the axis names of the terms' own node, which is recorded
    # with the running sums and names its axes as they do (the total's own names may differ: a captured einsum's
    # (i, j, b, h) reads terms laid out (b, j, i, h, m))
    own = terms[0].node.axes if terms else ()
    if sorted(own) != sorted(node.axes) or any(t.node is not terms[0].node for t in terms):
        return []
    return [Step(trace, node, tuple(dict(zip(own, t.index, strict=True))[a] for a in node.axes)) for t in terms]


def _factor_steps(ctx: LessonCtx, step: Step) -> list[Step]:
    """The steps multiplied into a product, a product among them opened up (``α B × 2`` as three numbers)."""
    out: list[Step] = []
    for i in step.inputs:
        inner = ctx.trace[i]
        out += _factor_steps(ctx, inner) if inner.op == "mul" and inner.is_element else [inner]
    return out


def _factors(ctx: LessonCtx, step: Step) -> list[str]:
    """The numbers of :func:`_factor_steps` as the page writes them."""
    return [_val(ctx, f) for f in _factor_steps(ctx, step)]


def _factor_values(ctx: LessonCtx, step: Step) -> list[float]:
    """The values of :func:`_factors`, as the page shows them (inputs as given, the rest rounded)."""
    shown = [(float(f.value), f.op == "input") for f in _factor_steps(ctx, step)]
    return [v if given else round(v, ctx.decimals) for v, given in shown]


def _product_rounds(ctx: LessonCtx, shown: list[float], total: float) -> bool:
    """True when the displayed factors multiply to something other than the displayed product.

    ``0.2460 × 1 × 2.0000`` is 0.4920, the page says 0.4921: the factor was
    rounded, the product was not.
    """
    if not all(np.isfinite([*shown, total])):
        return False
    return ctx.num(float(np.prod(shown))) != ctx.num(total)


def _once(ctx: LessonCtx, key: str, rounds: bool) -> str:
    """The rounding note ``lesson.<key>`` the first time on a page that ``rounds`` holds, else nothing."""
    if not rounds or key in ctx.said:
        return ""
    ctx.said.add(key)
    return ctx.s(f"lesson.{key}", n=ctx.decimals)


def _formula(ctx: LessonCtx, step: Step) -> str:
    """The step's formula: the narrative's, when it gives one (indices filled in), else the recorded one."""
    mine = ctx.text(step.node).formula
    return ids.fill(mine, step.bound, step.node.sizes) if mine else step.latex or step.id


def equation(ctx: LessonCtx, step: Step) -> Equation:
    """One entry written out: formula = factors = terms = total, with the running sums below."""
    tr = ctx.trace
    ins = [tr[i] for i in step.inputs]
    vals = [_val(ctx, s) for s in ins]
    at = [s.id for s in ins]
    chain: list[list[str] | str] = []
    doors: list[list[tuple[str, ...]]] = []  # per written step, per chunk: the ids of the numbers it writes
    extra: list[str] = []
    note = ""
    op = step.op
    if op == "sum" and ins:
        if all(t.op == "mul" for t in ins):
            chain.append(chunked(_cut([r" \times ".join(_val(ctx, tr[f]) for f in t.inputs) for t in ins])))
            doors.append(_cut_ids([tuple(t.inputs) for t in ins]))
        chain.append(chunked(_cut(vals)))
        doors.append(_cut_ids([(i,) for i in at]))
        runs = _running_sums(tr, step, ins)
        if runs and len(runs) <= MAX_TERMS:
            extra = [rf"s_{{{n + 1}}} = {alone(ctx.num(float(r.value)))}" for n, r in enumerate(runs)]
        note = _once(ctx, "rounding", len(ins) <= MAX_TERMS and ctx.rounds([t.value for t in ins], step.value))
    elif op == "div" and len(vals) == 2:
        opened = ins[0].op == "mul" and ins[0].is_element
        top = r" \times ".join(_factors(ctx, ins[0])) if opened else vals[0]
        chain.append(rf"\frac{{{top}}}{{{vals[1]}}}")
        doors.append([(*([f.id for f in _factor_steps(ctx, ins[0])] if opened else at[:1]), at[1])])
    elif op == "mul" and len(vals) == 2:
        chain.append(r" \times ".join(_factors(ctx, step)))
        doors.append([tuple(f.id for f in _factor_steps(ctx, step))])
        note = _once(ctx, "rounding_product", _product_rounds(ctx, _factor_values(ctx, step), float(step.value)))
    elif op in ("sub", "add") and len(vals) == 2:
        chain.append(f"{vals[0]} {SIGNS[op]} {vals[1]}")
        doors.append([tuple(at)])
        sign = -1.0 if op == "sub" else 1.0
        note = _once(ctx, "rounding", ctx.rounds([float(ins[0].value), sign * float(ins[1].value)], step.value))
    elif op == "exp" and vals:
        chain.append(f"e^{{{vals[0]}}}")
        doors.append([(at[0],)])
    elif op == "max":
        chain.append(rf"\max({', '.join(_cut(vals))})")
        doors.append([tuple(i for part in _cut_ids([(i,) for i in at]) for i in part)])
    elif op == "rescale_add" and len(vals) == 3:  # lesson flash: the running sum rescaled, then the block's part added
        chain.append(rf"{vals[0]} \times {vals[1]} + {vals[2]}")
        doors.append([tuple(at)])
    written = _formula(ctx, step)
    if ctx.text(step.node).formula:  # the narrative names the entry itself (a head's z): its left side is the page's
        lhs, *named = split_steps(written)
        formula = tuple(named)
    else:
        lhs, formula = sides(step, written)
    label = ctx.s("lesson.partial") if extra else ""
    steps = [*formula, *chain, alone(ctx.value(step.node, float(step.value)))]
    ids: list[list[tuple[str, ...]] | None] = [None] * len(formula)
    ids += [*doors, [(step.id,)]]  # the result opens its own step, as the left side does
    return board(anchor(step.id), step.id, lhs, steps, label, extra, note, focus=True, ids=ids)


def written(ctx: LessonCtx, node: Node) -> list[Block]:
    """Every focus-query entry of ``node`` written out (a note when keys were left out)."""
    steps = focus_steps(ctx, node)
    out: list[Block] = [equation(ctx, s) for s in steps]
    if "j" in node.axes and node.sizes["j"] > FULL_T:
        out.insert(0, Para(ctx.s("lesson.first_keys", n=TOP, t=node.sizes["j"]), note=True))
    return out


def _figure_caption(ctx: LessonCtx, node: Node, part: Part, key: str) -> Para:
    """The narrative's figure caption of ``node`` (else a sentence around its table caption), with its head."""
    own = ctx.text(node).figure
    what = caption(ctx, node, Part((), "", "")).text
    text = own or ctx.s(key, node=what, q=ctx.q)
    if part.label:
        text = ctx.s("lesson.head_caption", head=part.label, caption=text)
    return Para(text, math=True)


def _alt(ctx: LessonCtx, alt: str, part: Part) -> str:
    return ctx.s("lesson.head_alt", alt=alt, head=part.label) if part.label else alt


def heatmaps(ctx: LessonCtx, node: Node, prefix: str = "") -> list[Block]:
    """A heatmap of the node's (i, j) matrix, one per head, the focus row outlined (queries down, in any layout).

    ``prefix`` goes before the node's name in the figures' names: a node drawn a second time on a page (the
    weights beside their gradient) needs figures of its own.
    """
    given, node = node, upright(node)
    hide, order = ctx.hidden(given), upright_order(given)  # the mask is laid out as the node was recorded
    if hide is not None and order is not None:
        hide = np.transpose(hide, order)
    out: list[Block] = []
    every = list(parts(ctx, node))
    for part in every:
        name = f"fig-{prefix}{anchor(node.name)}{part.anchor}"
        svg, small = heatmap_svg(
            ctx,
            name,
            np.asarray(node.value[part.lead]),
            hidden=None if hide is None else hide[part.lead],
            doors=partial(_cell_ids, given, part),  # ids name entries in the recorded order: none for a reordered node
        )
        cap = _figure_caption(ctx, node, part, "lesson.heat_caption")
        if small:
            cap = Para(cap.text + " " + ctx.s("lesson.heat_small"), math=True)
        matrix = np.asarray(node.value[part.lead])
        alt = _alt(ctx, alts.heat(ctx, ctx.text(node).alt or ctx.s("lesson.heat_alt"), matrix), part)
        out.append(Figure(name, name, svg, alt, cap, multiple=len(every) > 1))
    return out


def _cell_ids(node: Node, part: Part) -> list[list[str]] | None:
    """The step id of each cell of one head's (i, j) matrix: the doors of its heatmap (none for a slice node)."""
    if node.granularity != ELEMENT or node.axes[-2:] != ("i", "j") or len(node.axes) != len(part.lead) + 2:
        return None
    r, c = node.value.shape[-2:]
    return [[_id(node, (*part.lead, i, j)) for j in range(c)] for i in range(r)]


def bars(ctx: LessonCtx, node: Node) -> list[Block]:
    """How the focus query's weighted sum is built: each token's contribution per component, one per head."""
    terms_node = ctx.trace.node(f"{node.name}.t")
    out: list[Block] = []
    lead = lead_axes(node)
    r = min(row(ctx, node), node.sizes.get("i", ctx.q))  # a cache step's one new query: its only row
    q = r + row_offset(ctx, node)  # the token that row is
    for part in parts(ctx, node):
        at = (*part.lead, r - 1) if lead else (r - 1,)
        terms = np.asarray(terms_node.value[at], dtype=np.float64)
        z = np.asarray(node.value[at], dtype=np.float64)
        names, others = list(ctx.trace.tokens[: terms.shape[0]]), False  # the keys: a cache holds the first ones
        if terms.shape[0] > FIG_PARTS:
            keep = FIG_PARTS - 1
            terms = np.vstack([terms[:keep], terms[keep:].sum(axis=0)])
            names, others = [*names[:keep], ctx.s("lesson.others")], True
        name = f"fig-{anchor(node.name)}{part.anchor}"
        comps = [ctx.s("lesson.bars_comp", c=c + 1) for c in range(z.shape[0])]
        zlabel = ctx.s("lesson.bars_total", q=sup(f"({q})"))
        svg = stacked(name, terms, z, names, comps, zlabel, others)
        what = ctx.text(node).alt or ctx.s("lesson.bars_what")
        alt = _alt(ctx, ctx.s("lesson.bars_alt", q=q, token=ctx.trace.tokens[q - 1], what=what), part)
        out.append(Figure(name, name, svg, alt, _figure_caption(ctx, node, part, "lesson.bars_caption")))
    return out
