"""The report's view model: what a page shows, with every number already formatted.

Renderers (HTML, Markdown) walk a :class:`Page`: sections of blocks, each
block one of a few kinds (``kind`` tells which), so templates only choose
markup and never compute.  Numbers are strings made by :func:`tracer.core.fmt.num`;
a :class:`Num` remembers the step id it shows, so a reader (or a test) can
trace it back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from tracer.present.strings import html_lang

_NUMBER = re.compile(r"^[-+]?(\d[\d.,]*(e[-+]?\d+)?|inf|nan)$|^[⋯…⋮]?$")
"""Cells that a number column holds: numbers, inf and nan, and the ellipsis of left-out entries."""


@dataclass(frozen=True)
class Num:
    """One table cell: its text, and the id of the step it shows (empty for labels)."""

    text: str
    id: str = ""
    cls: str = ""  # "bad" for inf/nan, "label" for row labels
    latex: bool = False  # text is LaTeX (a formula in a header or label cell)
    math: bool = False  # text is prose whose ``$...$`` spans are LaTeX (text we write, never a token)

    @property
    def wordy(self) -> bool:
        """A cell of words (a label, a token, a description), not a number: set flush left."""
        return self.cls == "label" or self.math or bool(self.text and not _NUMBER.match(self.text))


@dataclass(frozen=True)
class Row:
    """A table row; an ``elided`` row stands for rows left out and has no cells."""

    cells: tuple[Num, ...] = ()
    focus: bool = False
    total: bool = False
    elided: str = ""

    @property
    def strong(self) -> tuple[bool, ...]:
        """Per cell: set in bold where the format has no row styles (Markdown): the focus and total rows' values."""
        return tuple((self.focus or self.total) and bool(c.text) for c in self.cells)


WIDE_COLUMNS = 8
"""More columns than this (labels included) make a :attr:`Table.wide` table."""


@dataclass(frozen=True)
class Table:
    """A captioned table; header cells may be LaTeX, the caption may be a :class:`Para` with maths."""

    anchor: str
    caption: str | Para
    head: tuple[Num, ...]
    rows: tuple[Row, ...]
    notes: tuple[Para, ...] = ()
    kind: Literal["table"] = "table"

    @property
    def wide(self) -> bool:
        """Whether the table has so many columns that print sets it across the page in small type.

        A narrower table keeps its own width and the page's reading size on
        paper: stretched to the page it would spread a few numbers far apart.
        """
        return len(self.head) > WIDE_COLUMNS

    @property
    def align(self) -> tuple[Literal["left", "right"], ...]:
        """Per column: words (labels, tokens, descriptions) left, numbers right, decided by the cells."""
        rows = [r.cells for r in self.rows if not r.elided]
        return tuple("left" if any(len(c) > n and c[n].wordy for c in rows) else "right" for n in range(len(self.head)))


@dataclass(frozen=True)
class Equation:
    """A worked equation, written as a teacher writes it on the board.

    ``lhs`` is the quantity (``\\omega_{21}``); each entry of ``rhs`` is one
    ``= …`` step (the formula, the numbers that go in, the terms, the total),
    given as *chunks*: LaTeX pieces between which a line may break, the first
    starting with ``=`` and the later ones with their operator (``+ 0.1305``).
    A ``broken`` equation puts every step on a line of its own, aligned at the
    ``=``, so its result is in view on a phone; a short one stays on one line.
    ``extra`` (the running sums) is a second line of chunks under ``extra_label``.
    ``doors`` runs parallel to ``rhs``: for each chunk, the step ids of the
    numbers it writes, in order (empty for a chunk of symbols), so that each
    number put into the equation opens its own panel like a table's cell.
    Build one with :func:`tracer.present.views.layout.board`.
    """

    anchor: str
    step: str
    lhs: str
    rhs: tuple[tuple[str, ...], ...]
    extra_label: str = ""
    extra: tuple[str, ...] = ()
    note: str = ""
    focus: bool = False
    broken: bool = False
    doors: tuple[tuple[tuple[str, ...], ...], ...] = ()
    kind: Literal["equation"] = "equation"

    @property
    def latex(self) -> str:
        """The whole equation on one line of LaTeX."""
        return " ".join([self.lhs, *(c for part in self.rhs for c in part)])


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

    Footnotes: a ``math`` paragraph may mark a footnote with ``[^key]`` and
    give its text in ``notes`` as ``(key, Para)``.  The page numbers them
    once, in reading order (:func:`tracer.present.views.notes.number`): the
    marker becomes ``[^3]``, the note goes to the end of its section, and the
    renderers link the two both ways.  What a sentence says about the tool
    (library kernels, machines, test suites) goes there, so the text speaks
    of attention.
    """

    text: str
    note: bool = False
    math: bool = False
    interactive: bool = False  # speaks of clicking the figures: left out where they are images (Markdown)
    notes: tuple[tuple[str, Para], ...] = ()  # footnotes not yet numbered: marker key -> text
    kind: Literal["para"] = "para"


@dataclass(frozen=True)
class Note:
    """A numbered footnote (page-wide number ``n``), listed at the end of its section."""

    n: int
    text: Para

    @property
    def anchor(self) -> str:
        """The note's id on the page (its reference links here)."""
        return f"note-{self.n}"

    @property
    def ref(self) -> str:
        """The id of the reference in the text (the note links back there)."""
        return f"note-ref-{self.n}"


@dataclass(frozen=True)
class Figure:
    """An SVG figure with its file name (Markdown), alt text and caption (text, or a :class:`Para` with maths).

    ``multiple`` marks one of a set of small multiples (one heatmap per head): an HTML page sets such
    figures side by side, so that a reader compares the heads at a glance and the page stays short.
    """

    anchor: str
    name: str
    svg: str
    alt: str
    caption: str | Para
    kind: Literal["figure"] = "figure"
    multiple: bool = False


@dataclass(frozen=True)
class Code:
    """Plain PyTorch lines that compute a stage (the notebook's cell, verbatim) and what their checks print."""

    anchor: str
    label: str
    source: str
    output: tuple[str, ...]
    kind: Literal["code"] = "code"


@dataclass(frozen=True)
class Group:
    """A titled list of blocks that the HTML page may fold away (the all-pairs expansions)."""

    anchor: str
    title: str
    blocks: tuple[Equation, ...]
    kind: Literal["group"] = "group"


@dataclass(frozen=True)
class Fold:
    """Prose a page folds away under a summary line (a rounding bound's derivation); printing opens it."""

    anchor: str
    summary: str
    blocks: tuple[Para | Formula, ...]
    kind: Literal["fold"] = "fold"


Block = Table | Equation | Formula | Para | Figure | Code | Group | Fold


@dataclass(frozen=True)
class Section:
    """A numbered part of the walk-through; its title may be a :class:`Para` with maths (``… vector $z^{(2)}$``)."""

    anchor: str
    title: str | Para
    blocks: tuple[Block, ...]
    notes: tuple[Note, ...] = ()  # its footnotes, numbered page-wide


@dataclass(frozen=True)
class Page:
    """A whole report."""

    lang: str
    title: str
    subtitle: str | Para
    summary: tuple[tuple[str, str | Para], ...]  # label, value (a symbol such as the focus query's as maths)
    sections: tuple[Section, ...]
    footer: str
    strings: dict[str, str] = field(default_factory=dict)  # the few UI labels the page script needs
    stops: frozenset[str] = frozenset()  # anchors of the blocks the step navigator stops at (see views/stops.py)
    doors: str = ""  # the panels' data as JSON (see views/doors.py): how each number shown was computed
    idea: Figure | None = None  # the lesson's picture of its idea, drawn before the numbers (see views/idea.py)

    @property
    def html_lang(self) -> str:
        """The page's language as an HTML ``lang`` attribute (Chinese pages are in simplified script)."""
        return html_lang(self.lang)

    @property
    def italic_captions(self) -> bool:
        """Whether Markdown sets captions in italics (not in Chinese, where slanted glyphs read poorly)."""
        return self.lang != "zh"

    @property
    def figures(self) -> tuple[Figure, ...]:
        """Every figure, in page order (the picture of the idea first)."""
        shown = tuple(b for s in self.sections for b in s.blocks if isinstance(b, Figure))
        return shown if self.idea is None else (self.idea, *shown)
