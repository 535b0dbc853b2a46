"""The backward section of a page: every gradient with its formula, its inputs and its numbers.

A trace recorded with its backward pass (``meta["backward"]``, the stages
``dcontext``, ``dnormalize`` … that follow the forward's) is shown as the
forward is, built by the same generic stage builder
(:func:`tracer.present.views.lesson.section`): each backward stage is a
section with its prose, a table of each gradient node (every number a door
to its equation and inputs), the focus query's entries of the gradients it
reaches written out term by term, and, in the softmax's stage, the weights
P beside their scores' gradient dS as heatmaps.

The prose of a stage is the lesson narrative's ``[stages.<name>]`` table
when it has one, else the shared text of the page's string table
(``backward.<name>.title`` and ``.text`` in ``templates/locale/<lang>.toml``),
written for every lesson that records the stage.  A page without a backward
pass has no backward section: the forward page is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from tracer.core.trace import ELEMENT, Node, Trace
from tracer.present.narrative import Narrative, NodeText, Stage
from tracer.present.strings import MissingString
from tracer.present.views.lessonctx import LessonCtx
from tracer.present.views.model import Figure, Para, Section
from tracer.present.views.nodes import anchor
from tracer.present.views.worked import heatmaps

Builder = Callable[[LessonCtx, int, str, Stage], Section]
"""How a stage becomes a section: the context, its number, the stage's name, its prose."""

PART_SUFFIXES = (".p", ".s", ".t")
"""The parts of a sum (products, running sums, terms): their totals are written out, with them."""
PREFIX = "backward-"
"""Before a node's name in the name of a figure the backward section draws again (``fig-backward-alpha``)."""
ROW_SUM = ".dot"
"""The suffix of the softmax backward's row sum: ``dscaled.dot`` is Σ_k α_ik ᾱ_ik of ``dscaled``."""


def stages(trace: Trace) -> list[str]:
    """The backward pass's stages, in the order recorded (none for a trace without one)."""
    back = trace.meta.get("backward")
    if not isinstance(back, dict):
        return []
    listed = [str(s) for s in back.get("stages", [])]
    return [s for s in listed if s in trace.stages]


def forward(order: Sequence[str], trace: Trace) -> list[str]:
    """``order`` without the backward pass's stages: what the forward page walks."""
    back = set(stages(trace))
    return [s for s in order if s not in back]


def story(ctx: LessonCtx, stage: str) -> Stage:
    """The prose of backward stage ``stage``: the lesson narrative's own, else the string table's, with its picks."""
    own = ctx.story.stages.get(stage) if ctx.story is not None else None
    if own is None:
        try:
            own = Stage(ctx.s(f"backward.{stage}.title"), ctx.s(f"backward.{stage}.text"))
        except MissingString:
            own = Stage(ctx.s("backward.other_title", stage=stage), ctx.s("backward.other_text"))
    nodes = [n for n in ctx.trace.nodes if n.stage == stage]
    return Stage(
        own.title,
        own.text,
        own.extra,
        own.show,
        write=own.write or tuple(n.name for n in nodes if _writes(n)),
        heatmap=own.heatmap or _softmax_gradient(nodes),
        bars=own.bars,
        notes=own.notes,
    )


def written_row(trace: Trace) -> int:
    """The 1-based query row the backward section writes out: the focus query's, unless its upstream gradient
    is all zero (lesson causal's dropout may drop every weight of a row, so its output and gradient are 0),
    then the nearest row whose gradient is not, a later one before an earlier one (a causal row 1 sees one key
    only); the focus query when every row is zero or there are no rows."""
    up = trace.node(str(trace.meta["backward"]["upstream"]))
    if "i" not in up.axes:
        return trace.query
    rows = np.moveaxis(np.asarray(up.value), up.axes.index("i"), 0)
    live = [n + 1 for n in range(rows.shape[0]) if np.any(rows[n] != 0)]
    q = trace.query
    return q if not live or q in live else min(live, key=lambda n: (abs(n - q), n < q))


def focused(ctx: LessonCtx) -> LessonCtx:
    """``ctx`` whose narrative writes the backward nodes out at :func:`written_row` (where one names no row)."""
    r = written_row(ctx.trace)
    story = ctx.story or Narrative("", ctx.s.lang, "", "", {})
    if r == ctx.q:
        return ctx
    nodes = dict(story.nodes)
    for n in ctx.trace.nodes:
        if n.stage in stages(ctx.trace) and not nodes.get(n.name, NodeText()).row:
            nodes[n.name] = replace(nodes.get(n.name, NodeText()), row=r)
    return LessonCtx(ctx.trace, ctx.s, ctx.decimals, story=replace(story, nodes=nodes), said=ctx.said)


def _writes(node: Node) -> bool:
    """Whether the focus query's entries of ``node`` are written out: a computed gradient over the queries ``i``.

    The gradients that reach the focus query (its row of ᾱ and of dS, the
    row sum, its query's and input's gradients) are written out; a weight's
    or a key's gradient sums over every query and is left to its table,
    whose numbers open the same equations.
    """
    parts = node.name.endswith(PART_SUFFIXES)
    return node.op != "input" and node.granularity == ELEMENT and "i" in node.axes and not parts


def _softmax_gradient(nodes: list[Node]) -> tuple[str, ...]:
    """The scores' gradient dS, when the stage takes the softmax back (its row sum ``<dS>.dot`` is here)."""
    names = {n.name for n in nodes}
    return tuple(n.name for n in nodes if n.name + ROW_SUM in names and n.args)[:1]


def weights_of(trace: Trace, told: Stage) -> Node | None:
    """The weights P drawn before the scores' gradient dS (the stage's first heatmap), when it is one.

    dS = P × (dP − row sum): P is dS's first operand.
    """
    if not told.heatmap:
        return None
    ds = trace.node(told.heatmap[0])
    if not ds.args or ds.name + ROW_SUM not in {n.name for n in trace.nodes}:
        return None
    return trace.node(ds.args[0].node)


def figures(ctx: LessonCtx) -> list[tuple[str, str]]:
    """Every heatmap of the backward section in page order, as (figure-name prefix, node): P, then dS."""
    out: list[tuple[str, str]] = []
    for stage in stages(ctx.trace):
        told = story(ctx, stage)
        weights = weights_of(ctx.trace, told)
        out += [(PREFIX, weights.name)] if weights is not None else []
        out += [("", name) for name in told.heatmap]
    return out


def beside(ctx: LessonCtx, part: Section, told: Stage) -> Section:
    """``part`` with the weights P drawn just before their scores' gradient dS (its first heatmap).

    P's figures are named ``fig-backward-…``: the forward section drew the same weights.
    """
    weights = weights_of(ctx.trace, told)
    if weights is None:
        return part
    first = f"fig-{anchor(told.heatmap[0])}"
    at = next((k for k, b in enumerate(part.blocks) if isinstance(b, Figure) and b.name.startswith(first)), None)
    if at is None:
        return part
    p = heatmaps(ctx, weights, prefix=PREFIX)
    return Section(part.anchor, part.title, (*part.blocks[:at], *p, *part.blocks[at:]), part.notes)


def intro(ctx: LessonCtx) -> Para:
    """What the backward pass differentiates and from which upstream gradient, above its first section."""
    back = ctx.trace.meta["backward"]
    key = "backward.intro_given" if back.get("loss") == "given" else "backward.intro_half_square"
    text = ctx.s(key, output=back["output"], upstream=back["upstream"])
    for more in back.get("also", []):  # a second module on the same inputs: its own term of L
        text += " " + ctx.s("backward.intro_also", output=more["output"], upstream=more["upstream"])
    r = written_row(ctx.trace)
    if r != ctx.q:
        text += " " + ctx.s("backward.other_row", q=ctx.q, r=r, token=ctx.trace.tokens[r - 1])
    return Para(text, math=True)


def sections(ctx: LessonCtx, first: int, section: Builder) -> list[Section]:
    """The backward pass's sections, numbered from ``first``, each built by ``section`` (the generic stage
    builder, :func:`tracer.present.views.lesson.section`, which leaves these stages out of the forward page);
    the first opens with :func:`intro`."""
    out: list[Section] = []
    if not stages(ctx.trace):
        return out
    ctx = focused(ctx)
    for n, stage in enumerate(stages(ctx.trace), first):
        told = story(ctx, stage)
        part = beside(ctx, section(ctx, n, stage, told), told)
        if not out:
            part = Section(part.anchor, part.title, (intro(ctx), *part.blocks), part.notes)
        out.append(part)
    return out
