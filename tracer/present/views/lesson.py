"""The generic stage report: any trace plus its narrative -> a page, with no lesson-specific code.

The page walks the trace's stages in order.  Each stage is a section: the
narrative's title and prose, then the nodes it features (``show``, by
default the stage's own nodes other than the parts of sums) as tables, the
focus query's entries of the ``write`` nodes worked out term by term, the
``heatmap`` nodes as heatmaps and the ``bars`` nodes as stacked
contributions, and a table of the stage's scalars (constants and checks).
Every lesson after the tutorial's, and every teacher's own pipeline, is
reported this way; the lesson supplies only its narrative.  A lesson that
builds its sections itself (the tutorial's walk-through) hands them to
:func:`assemble`, which finishes this page and that one alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tracer.core.trace import Node, Trace
from tracer.errors import InputError
from tracer.present.facts import fill
from tracer.present.narrative import Narrative, Stage
from tracer.present.strings import Strings
from tracer.present.views import backward, doors, idea
from tracer.present.views.code import blocks
from tracer.present.views.common import focus, unfollowed
from tracer.present.views.lessonctx import LessonCtx
from tracer.present.views.loops import bars
from tracer.present.views.model import Block, Fold, Formula, Page, Para, Section
from tracer.present.views.nodes import node_blocks, values_table
from tracer.present.views.notes import keys, number
from tracer.present.views.order import stage_order
from tracer.present.views.stops import stops
from tracer.present.views.worked import heatmaps, written
from tracer.version import __version__

PART_SUFFIXES = (".p", ".s", ".t")
"""Nodes whose names end so are the parts of a sum (products, running sums, terms)."""


def prose(text: str, anchor: str, notes: dict[str, str] | None = None) -> list[Block]:
    """Narrative text as blocks: paragraphs split at blank lines; a ``$$...$$`` paragraph is a formula.

    A ``[^key]`` marker in a paragraph cites the footnote ``notes[key]`` (the
    stage's ``[stages.<name>.notes]`` table); every note is cited once.
    """
    notes = notes or {}
    out: list[Block] = []
    cited: list[str] = []
    for n, chunk in enumerate(p.strip() for p in text.strip().split("\n\n")):
        if not chunk:
            continue
        if chunk.startswith("$$") and chunk.endswith("$$") and len(chunk) > 4:
            out.append(Formula(f"{anchor}-f{n + 1}", chunk[2:-2].strip()))
            continue
        mine = keys(chunk)
        missing = [k for k in mine if k not in notes]
        if missing:
            raise InputError(f"stage {anchor!r}: footnote [^{missing[0]}] has no text in its notes table")
        cited += mine
        said = tuple((k, Para(" ".join(notes[k].split()), math=True)) for k in dict.fromkeys(mine))
        out.append(Para(" ".join(chunk.split()), math=True, notes=said))
    unused = sorted(set(notes) - set(cited))
    if unused:
        raise InputError(f"stage {anchor!r}: footnote {unused[0]!r} is never cited in the text")
    return out


def featured(trace: Trace, stage: str, prose_stage: Stage) -> list[Node]:
    """The nodes a stage shows as tables: its ``show`` list, or its own nodes other than parts of sums."""
    if prose_stage.show is not None:
        return [trace.node(n) for n in prose_stage.show]
    return [n for n in trace.nodes if n.stage == stage and not n.name.endswith(PART_SUFFIXES)]


def section(ctx: LessonCtx, n: int, stage: str, story: Stage, code: Sequence[Block] = ()) -> Section:
    """One stage: its prose, its tables, its worked entries and figures, its scalars, then its code.

    A heatmap follows the table of its matrix (the same numbers, shaded), not the stage's last table.
    """
    tr = ctx.trace
    blocks: list[Block] = prose(story.text, stage, story.notes)
    if story.proof:  # a derivation: folded, its summary saying so
        derived = tuple(b for b in prose(story.proof, f"{stage}-proof") if isinstance(b, Para | Formula))
        blocks.append(Fold(f"{stage}-proof", ctx.s("fold.proof"), derived))
    nodes = featured(tr, stage, story)
    for node in nodes:
        blocks += node_blocks(ctx, node, stage)
        if node.name in story.heatmap:
            blocks += heatmaps(ctx, node)
    shown = {node.name for node in nodes}
    for name in story.heatmap:
        if name not in shown:
            blocks += heatmaps(ctx, tr.node(name))
    for name in story.write:
        blocks += written(ctx, tr.node(name))
    for name in story.bars:
        blocks += bars(ctx, tr.node(name))
    values = values_table(ctx, nodes, f"{stage}-values", n, title=story.title)
    if values is not None:
        blocks.append(values)
    blocks += code
    return Section(stage, f"{n}. {story.title}", tuple(blocks))


def with_code(code: dict[str, list[Block]]) -> backward.Builder:
    """:func:`section` for a backward stage, with the stage's code blocks (its autograd cells) at its end."""
    return lambda ctx, n, stage, story: section(ctx, n, stage, story, code.get(stage, ()))


def build(trace: Trace, story: Narrative, decimals: int = 4) -> Page:
    """The page of ``trace`` told by ``story`` (its language is the page's)."""
    story = fill(trace, story)  # a shipped narrative's statements about its example, for this trace
    s = Strings(story.lang)
    ctx = LessonCtx(trace, s, decimals, story=story)
    q = trace.query
    if not 1 <= q <= ctx.t:
        raise InputError(f"the focus query {q} is not one of the {ctx.t} tokens")
    code = blocks(trace, s)
    order = backward.forward(stage_order(trace), trace)
    shown = [section(ctx, n + 1, st, story.stage(st), code.get(st, ())) for n, st in enumerate(order)]
    lesson = (s("lesson.summary_lesson"), str(trace.meta.get("lesson", story.lesson)))
    summary = (lesson, *summary_rows(s, trace, str(trace.meta.get("dim", "?")), decimals))
    # a summary may hold $...$ like the prose
    heading = Heading(story.title, Para(" ".join(story.summary.split()), math=True), summary)
    return assemble(ctx, heading, shown, code)


def summary_rows(s: Strings, trace: Trace, dim: str, decimals: int) -> tuple[tuple[str, str | Para], ...]:
    """The rows of a page's summary box that every page has: sizes, the focus query, the precision shown, and
    the steps that do not follow from their inputs (an edited trace)."""
    q = trace.query
    return (
        (s("page.summary_tokens"), str(len(trace.tokens))),
        (s("page.summary_dim"), dim),
        *focus(s, q, trace.tokens[q - 1]),
        (s("page.summary_dtype"), trace.dtype),
        (s("page.summary_decimals"), s("page.decimals", n=decimals)),
        *unfollowed(trace, s),
    )


@dataclass(frozen=True)
class Heading:
    """What a page says before its sections: its title, the line under it, and the summary's rows."""

    title: str
    subtitle: str | Para
    summary: tuple[tuple[str, str | Para], ...]  # label, value


def assemble(ctx: LessonCtx, heading: Heading, forward: Sequence[Section], code: dict[str, list[Block]]) -> Page:
    """The page around a lesson's forward sections, in ``ctx``'s language: the one place a page is put together.

    The generic page (:func:`build`, its sections told by the narrative) and
    a lesson's own page part (the tutorial's walk-through, its sections built
    by the lesson) both end here, so every page is finished the same way:
    the backward section, when the trace has one, follows the forward
    sections, numbered after their last number, with its stages' code
    blocks; every footnote on the page is numbered once, in reading order;
    and the page gets its navigator's stops and words, the data of its
    doors, the picture of the lesson's idea and its footer.
    """
    s, trace = ctx.s, ctx.trace
    titles = [t.text if isinstance(t, Para) else t for t in (sec.title for sec in forward)]
    last = max((int(m.group(1)) for t in titles if (m := re.match(r"(\d+)", t))), default=0)
    sections = number((*forward, *backward.sections(ctx, last + 1, with_code(code))))
    ui = {k: s(f"page.{k}") for k in ("nav_prev", "nav_next", "nav_label", "nav_keys", "contents")}
    return Page(
        lang=s.lang,
        title=heading.title,
        subtitle=heading.subtitle,
        summary=heading.summary,
        sections=sections,
        footer=s("page.footer", version=__version__),
        strings=ui,
        stops=stops(sections),
        doors=doors.embedded(trace, sections, ctx.decimals, s),
        idea=idea.figure(trace, s),
    )
