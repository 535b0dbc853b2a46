"""Rich display in Jupyter: a trace or a step as HTML and Markdown, from the report's machinery.

``Trace._repr_mimebundle_`` and ``Step._repr_mimebundle_`` reach :func:`bundle`
through :mod:`tracer.core.hooks` (registered, lazily, by ``tracer/__init__.py``).  Both bundles hold
``text/plain`` (the object's ``repr``), ``text/html`` and ``text/markdown``, rendered by the one Jinja environment
from a small view model whose numbers come from :mod:`tracer.core.fmt` and
:mod:`tracer.present.explain`.  The HTML is one ``<div class="attn-trace-display">``
whose styles are all scoped under that class (they cannot restyle the
notebook), with MathML for math and no script or remote load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tracer.core import fmt, portable
from tracer.core.trace import ELEMENT, Node, Step, Trace
from tracer.present import explain
from tracer.present.board import elide
from tracer.present.render.env import render
from tracer.present.render.html import asset
from tracer.present.strings import Strings

ROOT = "attn-trace-display"
"""The class every display style is scoped under."""
SKIP = (".p", ".s", "_sum")
"""Name endings of bookkeeping nodes (products, running sums, weight sums), never a headline."""


@dataclass(frozen=True)
class Headline:
    """The focus query's row of a stage's main result: its id, formula and values as shown."""

    id: str
    latex: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class StageRow:
    """One stage: its name, how many steps it holds, and its headline (if it has one)."""

    name: str
    steps: int
    headline: Headline | None


@dataclass(frozen=True)
class Summary:
    """What a trace's display shows."""

    lesson: str
    tokens: tuple[tuple[str, bool], ...]  # each token, and whether it is the focus query's
    query: int
    query_token: str
    dtype: str
    steps: int
    stages: tuple[StageRow, ...]


@dataclass(frozen=True)
class StepView:
    """What a step's display shows; ``equation`` and ``value`` as ``attn-trace explain`` writes them."""

    id: str
    equation: str
    latex: str
    value: str
    op: str
    stage: str
    inputs: tuple[str, ...]
    more: int


def _main_node(nodes: list[Node]) -> Node | None:
    """The stage's main per-query result: its last element node indexed by query, not a bookkeeping one."""
    fits = [n for n in nodes if n.granularity == ELEMENT and n.axes[:1] == ("i",) and not n.name.endswith(SKIP)]
    plain = [n for n in fits if "." not in n.name]
    best = plain or fits
    return best[-1] if best else None


def headline(trace: Trace, node: Node) -> Headline:
    """The focus query's row of ``node``, long rows elided around ``⋯``."""
    step = Step(trace, node, (min(trace.query, node.value.shape[0]) - 1,))
    row = np.asarray(step.value).ravel()
    dec = fmt.places(node.value) if node.op == "input" else fmt.DECIMALS  # inputs as given: 0.55, 0.80
    values = tuple("⋯" if k is None else fmt.shown(float(row[k]), dec) for k in elide(row.size))
    return Headline(step.id, step.latex, values)


def summary(trace: Trace) -> Summary:
    """The view model of a trace's display."""
    rows = []
    for stage in trace.stages:
        nodes = [n for n in trace.nodes if n.stage == stage]
        main = _main_node(nodes)
        rows.append(StageRow(stage, sum(n.nsteps for n in nodes), headline(trace, main) if main else None))
    tokens = tuple(trace.tokens)
    q = trace.query
    token = tokens[q - 1] if 0 < q <= len(tokens) else ""
    lesson = str(trace.meta.get("lesson", "?"))
    marked = tuple((tok, n == q) for n, tok in enumerate(tokens, 1))
    return Summary(lesson, marked, q, token, trace.dtype, len(trace), tuple(rows))


def step_view(step: Step) -> StepView:
    """The view model of a step's display."""
    trace = step._trace
    if step.is_element:
        equation = explain.equation(trace, step)
        value = explain.value_text(trace, step.id)
    else:
        equation = f"{step.id} = {step.text}" if step.text else step.id
        value = explain.array_text(np.asarray(step.value)).strip()
    ins = step.inputs
    shown = ins[: explain.MAX_IDS]
    return StepView(step.id, equation, step.latex, value, step.op, step.stage, shown, len(ins) - len(shown))


def _bundle(obj: Any, name: str, **context: Any) -> dict[str, str]:
    strings = Strings("en")
    css = asset("display.css")
    return {
        "text/plain": repr(obj),
        "text/html": render(f"{name}.html.j2", strings, root=ROOT, css=css, **context),
        "text/markdown": render(f"{name}.md.j2", strings, **context),
    }


def trace_bundle(trace: Trace) -> dict[str, str]:
    """A trace's MIME bundle: its lesson, tokens, stages and headline results."""
    return _bundle(trace, "display_trace", t=summary(portable.shown(trace)))


def step_bundle(step: Step) -> dict[str, str]:
    """A step's MIME bundle: equation, formula, value, op, stage and inputs."""
    shown = portable.shown(step._trace)
    return _bundle(step, "display_step", s=step_view(Step(shown, shown.node(step.node.name), step.index)))


def bundle(obj: Trace | Step, include: Any = None, exclude: Any = None) -> dict[str, str]:
    """The MIME bundle of a trace or a step, restricted as IPython asks: the ``display`` hook."""
    full = trace_bundle(obj) if isinstance(obj, Trace) else step_bundle(obj)
    return select(full, include, exclude)


def select(bundle: dict[str, str], include: Any = None, exclude: Any = None) -> dict[str, str]:
    """The bundle restricted as IPython asks (``include``/``exclude`` MIME types)."""
    return {k: v for k, v in bundle.items() if (not include or k in include) and (not exclude or k not in exclude)}
