"""The report's view model: what a page shows, with every number already formatted.

Renderers (HTML, Markdown) walk a :class:`Page`: sections of blocks, each
block one of a few kinds (``kind`` tells which), so templates only choose
markup and never compute.  Numbers are strings made by :func:`tracer.core.fmt.num`;
a :class:`Num` remembers the step id it shows, so a reader (or a test) can
trace it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Num:
    """One table cell: its text, and the id of the step it shows (empty for labels)."""

    text: str
    id: str = ""
    cls: str = ""  # "bad" for inf/nan, "label" for row labels
    latex: bool = False  # text is LaTeX (a formula in a header or label cell)
    math: bool = False  # text is prose whose ``$...$`` spans are LaTeX (text we write, never a token)


@dataclass(frozen=True)
class Row:
    """A table row; an ``elided`` row stands for rows left out and has no cells."""

    cells: tuple[Num, ...] = ()
    focus: bool = False
    total: bool = False
    elided: str = ""


@dataclass(frozen=True)
class Table:
    """A captioned table; header cells may be LaTeX, the caption may be a :class:`Para` with maths."""

    anchor: str
    caption: str | Para
    head: tuple[Num, ...]
    rows: tuple[Row, ...]
    notes: tuple[Para, ...] = ()
    kind: Literal["table"] = "table"


@dataclass(frozen=True)
class Equation:
    """A worked equation: the formula filled with the trace's numbers, and an optional second line."""

    anchor: str
    step: str
    latex: str
    extra_label: str = ""
    extra: str = ""
    note: str = ""
    focus: bool = False
    kind: Literal["equation"] = "equation"


@dataclass(frozen=True)
class Formula:
    """A display formula with a short label (the recap, the general forms)."""

    anchor: str
    latex: str
    label: str = ""
    kind: Literal["formula"] = "formula"


@dataclass(frozen=True)
class Para:
    """A paragraph of prose; ``note`` paragraphs are set apart (caveats, elisions).

    With ``math``, ``$...$`` spans in the text are inline LaTeX (only for
    text we write: never set it on text that holds a token).
    """

    text: str
    note: bool = False
    math: bool = False
    kind: Literal["para"] = "para"


@dataclass(frozen=True)
class Figure:
    """An SVG figure with its file name (Markdown), alt text and caption (text, or a :class:`Para` with maths)."""

    anchor: str
    name: str
    svg: str
    alt: str
    caption: str | Para
    kind: Literal["figure"] = "figure"


@dataclass(frozen=True)
class Group:
    """A titled list of blocks that the HTML page may fold away (the all-pairs expansions)."""

    anchor: str
    title: str
    blocks: tuple[Equation, ...]
    kind: Literal["group"] = "group"


Block = Table | Equation | Formula | Para | Figure | Group


@dataclass(frozen=True)
class Section:
    """A numbered part of the walk-through."""

    anchor: str
    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Page:
    """A whole report."""

    lang: str
    title: str
    subtitle: str
    summary: tuple[tuple[str, str], ...]
    sections: tuple[Section, ...]
    footer: str
    strings: dict[str, str] = field(default_factory=dict)  # the few UI labels the page script needs

    @property
    def figures(self) -> tuple[Figure, ...]:
        """Every figure, in page order."""
        return tuple(b for s in self.sections for b in s.blocks if isinstance(b, Figure))
