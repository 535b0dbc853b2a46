"""Every number a door: the data a page's panels read when a reader opens a number.

A page shows numbers in tables, worked equations and figures; each of them
is one step of the trace.  The page script turns each into a button that
opens a panel with the step's id, its equation with the numbers put in (the
one ``attn-trace explain`` prints), its operation and its inputs, each of
which opens its own panel, so a reader can walk back to the embeddings.

The panels' data is one JSON object embedded in the page
(``<script type="application/json">``), read by the script only when the
first panel opens, so it costs nothing before then.  It holds the steps the
page shows and, breadth first, the steps they were computed from, up to
:data:`LIMIT` steps; an input beyond that is listed by its id without a
door.  Each step lists at most :data:`MAX_INPUTS` inputs (a softmax over 512
keys names the first ones and how many more there are).  Layout::

    {"w": {"close": "Close", ...},      # the panel's words
     "ops": ["input", "mul", ...],      # each operation once
     "ids": ["omega[2,1]", ...],        # each step embedded, once
     "s": [[op, value, equation, inputs, more], ...]}

``s`` runs parallel to ``ids``: the operation's index in ``ops``, the value
as shown, the equation after ``id =``, the inputs (an index into ``ids``, or
the id itself for an input beyond :data:`LIMIT`) and how many inputs were
not listed.
"""

from __future__ import annotations

import json
import re
import weakref
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from tracer.core.fmt import printable
from tracer.core.trace import Trace
from tracer.present.explain import equation, value_text
from tracer.present.strings import Strings
from tracer.present.views.model import Block, Equation, Figure, Group, Section, Table

LIMIT = 6000
"""Most steps a page embeds: the shown ones first, then their inputs, nearest first."""
MAX_INPUTS = 16
"""Most inputs a panel lists as doors; the rest are counted."""
WORDS = ("close", "trail", "value", "equation", "op", "inputs", "more", "none")
"""The panel's words (``[door]`` of the locale tables), carried in the data so the page holds them once."""
COUNT = "{n}"
"""The slot in the ``more`` word that the page's script fills with how many inputs are not listed."""
_FIGURE_ID = re.compile(r'data-id="([^"]*)"')


def shown(sections: Iterable[Section]) -> Iterator[str]:
    """The step ids a page shows, in page order: table cells, worked equations, figure cells."""

    def walk(block: Block) -> Iterator[str]:
        if isinstance(block, Table):
            yield from (c.id for r in block.rows for c in r.cells if c.id)
        elif isinstance(block, Equation):
            yield block.step
        elif isinstance(block, Group):
            for e in block.blocks:
                yield from walk(e)
        elif isinstance(block, Figure):
            yield from (_unescape(m) for m in _FIGURE_ID.findall(block.svg))

    for s in sections:
        for b in s.blocks:
            yield from walk(b)


def _unescape(text: str) -> str:
    return text.replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def data(trace: Trace, sections: Iterable[Section], decimals: int, s: Strings) -> dict[str, object]:
    """The panels' data for a page of ``trace`` showing ``sections``, with the panel's words in ``s``'s language."""
    start = tuple(dict.fromkeys(i for i in shown(sections) if i in trace))
    steps = _steps(trace, start, decimals)
    words = {k: s(f"door.{k}", n=COUNT) for k in WORDS}  # "more" keeps a slot the page's script fills
    return {"w": words, **steps}


_MADE: weakref.WeakKeyDictionary[Trace, dict[tuple[object, ...], dict[str, list[Any]]]]
_MADE = weakref.WeakKeyDictionary()
"""Per trace, the steps' part of the data already made: a lesson's pages in two languages show the same numbers,
and only the panel's words differ, so the second page reuses the first's (the equations are the same text)."""


def _steps(trace: Trace, start: tuple[str, ...], decimals: int) -> dict[str, list[Any]]:
    """``ops``, ``ids`` and ``s`` of :func:`data`: the shown steps, then their inputs breadth first, up to LIMIT."""
    made = _MADE.setdefault(trace, {})
    key = (start, decimals, LIMIT, MAX_INPUTS)
    if key in made:
        return made[key]
    queue = deque(start)
    seen = set(queue)
    ops: dict[str, int] = {}
    rows: dict[str, tuple[int, str, str, list[str], int]] = {}
    while queue and len(rows) < LIMIT:
        sid = queue.popleft()
        step = trace[sid]
        if not step.is_element:
            continue
        ins = step.reads()  # counted whole, written out only as far as the panel lists them
        listed = ins[:MAX_INPUTS]
        said = printable(equation(trace, step, decimals)).removeprefix(f"{sid} = ")  # the panel's title is the id
        op = ops.setdefault(step.op, len(ops))
        rows[sid] = (op, printable(value_text(trace, sid, decimals)), said, listed, len(ins) - len(listed))
        for i in listed:
            if i not in seen:
                seen.add(i)
                queue.append(i)
    at = {sid: n for n, sid in enumerate(rows)}
    steps = [[op, v, said, [at.get(i, i) for i in listed], more] for op, v, said, listed, more in rows.values()]
    out: dict[str, list[Any]] = {"ops": list(ops), "ids": list(rows), "s": steps}
    made[key] = out
    return out


def embedded(trace: Trace, sections: Iterable[Section], decimals: int, s: Strings) -> str:
    """:func:`data` as JSON text safe inside a ``<script>`` element (no ``<``, ``>`` or ``&`` left raw)."""
    text = json.dumps(data(trace, sections, decimals, s), ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
