"""Walk-through notebooks: a trace in, a Jupyter notebook (nbformat 4.5 JSON bytes) out.

A notebook alternates the lesson's prose (its narrative, Markdown with
``$...$`` math) with code cells that recompute each stage in plain torch, the
way the tutorial and the book write it, and print the torch value beside the
value the trace recorded (embedded as literals), with a check that they
agree.  Nothing is random: cell ids come from the lesson, the stage and the
cell's position, no outputs or execution counts are stored and keys are
sorted, so the same trace gives the same bytes.

Each lesson writes its own code cells (its
:meth:`~tracer.record.lesson.Lesson.notebook_cells`); the assembly here is
generic over the lesson's stages (in the order its report shows them) and the
narrative.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tracer.core import portable
from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.message import Message
from tracer.present import narrative
from tracer.present.notebook.code import Cell, lesson_cells, setup, traced_cell
from tracer.present.render.env import md
from tracer.present.strings import Strings

__all__ = ["build", "cells"]

KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def cell_id(*parts: object) -> str:
    """A stable cell id (nbformat: letters, digits, ``-`` and ``_``, at most 64 characters)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", "-".join(str(p) for p in parts))[:64]


def _cell(kind: str, ident: str, source: str) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "cell_type": kind,
        "id": ident,
        "metadata": {},
        "source": source.rstrip("\n").splitlines(keepends=True),
    }
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def intro(trace: Trace, story: narrative.Narrative, s: Strings) -> str:
    """The first Markdown cell: title, summary, what the notebook was built for, how to read it."""
    q = trace.query
    built = s(
        "notebook.built_for",
        lesson=trace.meta.get("lesson", "?"),
        t=len(trace.tokens),
        q=q,
        token=md(trace.tokens[q - 1]),
        dtype=trace.dtype,
    )
    return f"# {story.title}\n\n{story.summary}\n\n{built}\n\n{s('notebook.how')}\n"


def cells(trace: Trace, lang: str = "en", pipeline: str | None = None) -> list[dict[str, Any]]:
    """Every cell of the walk-through notebook of ``trace`` in ``lang``.

    ``pipeline`` is the ``module:function`` spec of a teacher's own pipeline
    (the trace carries its narrative): its notebook re-runs it
    (:mod:`tracer.present.notebook.pipeline`) instead of recomputing in plain torch.
    """
    # these build on the views, which read the lesson code from .code: imported when used, so that
    # importing .code (and so this package) never reaches back into the views
    from tracer.present.notebook.captured import cells as captured_cells
    from tracer.present.notebook.pipeline import cells as custom_cells
    from tracer.present.report import narrative_of
    from tracer.present.views import backward
    from tracer.present.views.lessonctx import LessonCtx
    from tracer.present.views.order import page_order

    lesson = str(trace.meta.get("lesson", "lesson"))
    story = narrative_of(trace, lang)
    s = Strings(lang)
    per_stage: dict[str, list[Cell]] | None
    if pipeline is not None:
        per_stage = custom_cells(trace, story, pipeline)
    elif trace.meta.get("captured") and isinstance(trace.meta.get("torch"), str):
        per_stage = captured_cells(trace, story, str(trace.meta["torch"]))
    else:
        per_stage = lesson_cells(trace)
    if per_stage is None:
        raise no_cells(lesson)
    everything = "".join(code for stage in per_stage.values() for code in stage)
    out = [_cell("markdown", cell_id(lesson, "intro"), intro(trace, story, s))]
    out.append(_cell("code", cell_id(lesson, "setup"), setup(trace)))
    out.append(_cell("code", cell_id(lesson, "traced"), traced_cell(trace, everything)))
    ctx = LessonCtx(trace, s, 4, story=story)
    back = backward.stages(trace)
    for n, stage in enumerate([*backward.forward(page_order(trace), trace), *back], 1):  # as the report's sections
        prose = backward.story(ctx, stage) if stage in back else story.stage(stage)
        opening = f"{backward.intro(ctx).text}\n\n" if back[:1] == [stage] else ""
        text = f"## {n}. {prose.title}\n\n{opening}{narrative.footnoted(prose)}\n"
        out.append(_cell("markdown", cell_id(lesson, stage), text))
        for k, code in enumerate(per_stage.get(stage, []), 1):
            out.append(_cell("code", cell_id(lesson, stage, k), code))
    return out


def build(trace: Trace, lang: str = "en", pipeline: str | None = None) -> bytes:
    """The notebook file's bytes: nbformat 4.5 JSON, keys sorted, the same for the same trace."""
    nb = {
        "cells": cells(portable.shown(trace), lang, pipeline),
        "metadata": {
            "attn_trace": {"lang": lang, "lesson": trace.meta.get("lesson"), "query": trace.query},
            "kernelspec": KERNEL,
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return (json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def no_cells(lesson: str) -> InputError:
    return InputError(Message("notebook.no_notebook_code_lesson", lesson=repr(lesson)))


def writes_cells(lesson: str) -> None:
    """One line when the installed lesson ``lesson`` writes no notebook cells (an unknown name is said later)."""
    from tracer.record import registry
    from tracer.record.lesson import PackagedLesson

    try:
        chosen = registry.get(lesson)
    except InputError:
        return
    if isinstance(chosen, PackagedLesson) and chosen.notebook is None:
        raise no_cells(lesson)
