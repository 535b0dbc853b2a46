"""Notebook code for captured torch code (``--torch FILE.py:FN``).

The notebook re-runs the captured function itself: its first code cell
imports ``tracer`` and captures ``FN()`` again, from the spec exactly as it
was given (a ``path/to/file.py`` is resolved from the notebook's working
directory); each stage then prints the re-run's values of the nodes the
stage features beside the traced literals and checks that they agree.  The
seed the function sets makes the re-run draw the same numbers.
"""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.narrative import Narrative
from tracer.present.notebook.code import Cell, check, lines
from tracer.present.notebook.pipeline import step
from tracer.present.views.lesson import featured
from tracer.present.views.order import page_order


def cells(trace: Trace, story: Narrative, spec: str) -> dict[str, list[Cell]]:
    """Stage -> code cells; the re-run opens the first stage."""
    rerun = lines(
        "from tracer.record.capture import script",
        "",
        f"TORCH = {spec!r}  # a file path is read from the notebook's working directory",
        f"rerun = script.run(TORCH, {trace.tokens!r}, {trace.query})",
    )
    out: dict[str, list[Cell]] = {}
    for n, stage in enumerate(page_order(trace)):
        nodes = [node for node in featured(trace, stage, story.stage(stage)) if node.op != "opaque"]
        shown = [step(trace, node) for node in nodes]
        checks = lines(*(check(trace, name, f'torch.tensor(rerun["{name}"].value)') for name in shown)) if shown else ""
        out[stage] = [c for c in ([rerun] if n == 0 else []) + [checks] if c]
    return out
