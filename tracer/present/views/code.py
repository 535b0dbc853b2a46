"""The code beside the maths: each stage's PyTorch lines, taken from the lesson's notebook code.

One source: a report shows the code cells that ``attn-trace notebook``
writes for the same trace (:func:`tracer.present.notebook.code.lesson_cells`),
in the form a reader pastes into Python (:mod:`.pagecode`: each check a
plain ``print``, the imports in the first block), and under each block what
PyTorch prints there.  The notebook keeps the checks against the traced
values.  Tests run the notebook, and paste each page's blocks into a fresh
interpreter and compare what it prints with the page.  Lessons without
notebook code (a teacher's own pipeline) get no code blocks.
"""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.present import torchprint
from tracer.present.strings import Strings
from tracer.present.views import pagecode
from tracer.present.views.common import FULL_T
from tracer.present.views.model import Block, Code, Section

PAGE_NUMBERS = torchprint.THRESHOLD
"""The most numbers a page's code may write out as literals (torch prints no more in full)."""

SECTION = {"matrix": "pairs"}
"""Notebook stage -> section of the tutorial's page, where the two differ."""


def blocks(trace: Trace, s: Strings) -> dict[str, list[Block]]:
    """Stage -> its code blocks (empty when the lesson has no notebook code)."""
    # a leaf module, but importing it runs the notebook package's __init__, which reaches the renderers
    from tracer.present.notebook.code import lesson_cells

    if trace.meta.get("captured") or "narrative" in trace.meta:
        return {}  # a teacher's pipeline or captured code: its notebook re-runs that code, not a lesson's
    if len(trace.tokens) > FULL_T:
        return {}  # the printed tensors would be the size of the trace: the notebook is the place for them
    cells = lesson_cells(trace)
    if cells is None or too_many_numbers(trace, cells):
        return {}
    head = pagecode.setup(trace, [c for sources in cells.values() for c in sources])
    out: dict[str, list[Block]] = {}
    for stage, sources in cells.items():
        for n, cell in enumerate(sources, 1):
            source, output = pagecode.page_form(trace, cell)
            label = "" if out else s("code.label")  # said once, over the page's first code
            block = Code(f"code-{stage}-{n}", label, (head if not out else "") + source, output)
            out.setdefault(stage, []).append(block)
    return out


def too_many_numbers(trace: Trace, cells: dict[str, list[str]]) -> bool:
    """Whether the traced values the cells read (``TRACED["x"]``, a literal on the page) exceed :data:`PAGE_NUMBERS`.

    A trained model's weights are tens of thousands of numbers: no reader
    pastes them from a page, so such a page shows no code and its notebook
    (which carries them) is the place to run it.
    """
    read = {name for sources in cells.values() for c in sources for name in pagecode.TRACED_VALUE.findall(c)}
    return sum(int(np.asarray(trace[name].value).size) for name in read) > PAGE_NUMBERS


def with_code(sections: tuple[Section, ...], code: dict[str, list[Block]]) -> tuple[Section, ...]:
    """``sections`` with each stage's code blocks at the end of the section that shows that stage."""
    at: dict[str, list[Block]] = {}
    for stage, found in code.items():
        at.setdefault(SECTION.get(stage, stage), []).extend(found)
    return tuple(Section(s.anchor, s.title, (*s.blocks, *at.get(s.anchor, ()))) for s in sections)
