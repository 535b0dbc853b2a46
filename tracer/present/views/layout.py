"""Worked equations laid out as on a board: one ``=`` step a line when the equation is long.

(Which terms of a long sum are written at all is :mod:`tracer.present.board`'s rule.)

A dot product written out (``ω₂₁ = x⁽²⁾·x⁽¹⁾ = 0.43 × 0.55 + … = 0.2365 + … = 0.9544``)
is 650 px wide at 16 px, wider than a phone's screen: on one line its result is
the part cut off.  :func:`board` keeps short equations on one line and puts
each step of a long one on a line of its own, the result last; inside a step,
the terms are *chunks* between which the page may wrap (HTML) or that the
Markdown renderer groups into rows of an ``aligned`` block.

Widths are estimated from the LaTeX (:func:`width`), in characters as they
appear on the page, which is all a layout decision needs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tracer.core.formula import definition
from tracer.core.trace import Step
from tracer.present.views.model import Equation

ONE_LINE = 34
"""Equations at most this many characters wide stay on one line (about 340 px: a phone's column)."""
_FRAC = re.compile(r"\\frac\{([^{}]*)\}\{([^{}]*)\}")
_SPACE = {r"\qquad": "xxxx", r"\quad": "xx", r"\left": "", r"\right": "", r"\displaystyle": ""}
_COMMAND = re.compile(r"\\[A-Za-z]+|\\.")


def width(latex: str) -> int:
    """Roughly how many characters ``latex`` takes on the page (a fraction as wide as its wider part)."""
    latex = _FRAC.sub(lambda m: "x" * max(width(m.group(1)), width(m.group(2))), latex)
    for command, shown in _SPACE.items():
        latex = latex.replace(command, shown)
    latex = _COMMAND.sub(lambda m: "x" if m.group(0)[1:].isalpha() else "", latex)
    return len(re.sub(r"[{}^_\s]", "", latex))


def sides(step: Step, formula: str | None = None) -> tuple[str, tuple[str, ...]]:
    """A worked equation's left side and the steps of its definition: the entry's symbol, and what it equals.

    ``formula`` stands in for the recorded one (a narrative's, its indices
    filled in).  An entry without a symbol (a captured op recorded without a
    name) is written as its formula alone, or as its id when it has none.
    """
    if not step.symbol:
        return (step.latex if formula is None else formula) or step.id, ()
    return step.symbol, step.definition if formula is None else definition(formula, step.symbol)


def chunked(items: Sequence[str], op: str = "+") -> list[str]:
    """A sum (or other chain) as chunks: the first term, then ``op term`` for each further one."""
    return [item if n == 0 else f"{op} {item}" for n, item in enumerate(items)]


def board(
    anchor: str,
    step: str,
    lhs: str,
    steps: Sequence[Sequence[str] | str],
    extra_label: str = "",
    extra: Sequence[str] = (),
    note: str = "",
    focus: bool = False,
    ids: Sequence[Sequence[Sequence[str]] | None] = (),
) -> Equation:
    """An :class:`Equation` ``lhs = steps[0] = steps[1] = …``, broken into lines when it is long.

    Each step is a string or a list of chunks (see :func:`chunked`); empty steps
    are dropped.  ``ids``, parallel to ``steps``, gives for each chunk of a step
    the step ids of the numbers it writes (``None`` or missing: a step of symbols).
    """
    rhs, doors = [], []
    for n, part in enumerate(steps):
        chunks = [part] if isinstance(part, str) else list(part)
        if chunks and any(c.strip() for c in chunks):
            rhs.append((f"= {chunks[0]}", *chunks[1:]))
            given = ids[n] if n < len(ids) else None
            doors.append(tuple(tuple(c) for c in given) if given else tuple(() for _ in chunks))
    whole = width(lhs) + sum(width(c) for part in rhs for c in part)
    opened = tuple(doors) if any(i for part in doors for i in part) else ()
    return Equation(
        anchor, step, lhs, tuple(rhs), extra_label, tuple(extra), note, focus, broken=whole > ONE_LINE, doors=opened
    )
