"""Notebook code for a teacher's own pipeline (``--pipeline module:function``).

attn-trace cannot write plain torch for a pipeline it does not know, so the
notebook re-runs it: the first code cell imports ``tracer`` and runs the
pipeline named by the ``module:function`` spec as it was given (a
``path/to/file.py`` is resolved from the notebook's working directory, a
module name from ``sys.path`` and that directory) on the traced inputs; each
stage then prints the re-run's values of the nodes the stage features (its
narrative's ``show`` list, else its own nodes that are not parts of sums),
the focus query's row where a node's first axis is the query ``i``, beside
the traced literals, and checks that they agree.
"""

from __future__ import annotations

from tracer.core.trace import Node, Trace
from tracer.errors import InputError
from tracer.message import Message
from tracer.present.narrative import Narrative
from tracer.present.notebook.code import Cell, check, inputs_cell, lines
from tracer.present.views.lesson import featured
from tracer.present.views.order import page_order


def inputs_node(trace: Trace) -> Node:
    """The recorded inputs: the first ``input`` node of shape (tokens, dim)."""
    shape = (len(trace.tokens), int(trace.meta.get("dim", -1)))
    for node in trace.nodes:
        if node.op == "input" and node.value.shape == shape:
            return node
    raise InputError(Message("notebook.pipeline_records_no_x", shape=shape[0], shape2=shape[1]))


def step(trace: Trace, node: Node) -> str:
    """The id a stage shows: the focus query's row of a node whose first axis is ``i``, else the whole node."""
    rows = node.value.shape[0] if node.value.ndim else 0
    return f"{node.name}[{trace.query}]" if node.axes[:1] == ("i",) and trace.query <= rows else node.name


def cells(trace: Trace, story: Narrative, spec: str) -> dict[str, list[Cell]]:
    """Stage -> code cells; the re-run itself opens the first stage."""
    x = inputs_node(trace)
    rerun = inputs_cell(trace, x.value) + lines(
        "",
        "from tracer import api",
        "from tracer.record import custom",
        "",
        f"PIPELINE = {spec!r}  # a file path is read from the notebook's working directory",
        f'example = api.example(inputs.double().tolist(), tokens, {trace.query}, "{trace.dtype}")',
        "rerun = custom.run(PIPELINE, example)",
    )
    out: dict[str, list[Cell]] = {}
    for n, stage in enumerate(page_order(trace)):
        shown = [step(trace, node) for node in featured(trace, stage, story.stage(stage))]
        checks = lines(*(check(trace, name, f'torch.tensor(rerun["{name}"].value)') for name in shown)) if shown else ""
        out[stage] = [c for c in ([rerun] if n == 0 else []) + [checks] if c]
    return out
