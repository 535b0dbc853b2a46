"""What every section builder shares: the trace, the strings, the number format, the size limits."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, SupportsFloat

import numpy as np

from tracer.core import fmt
from tracer.core.trace import Trace
from tracer.present.board import MAX_TERMS, elide
from tracer.present.figures import heat
from tracer.present.strings import Strings
from tracer.present.views.model import Num, Para, Row, Table

FULL_T = 12
"""Up to this many tokens, every row, matrix and expansion is shown."""
FULL_D = MAX_TERMS
"""Up to this many components, every component is shown (a dot product is a sum on the board)."""
TOP = 8
"""With more tokens than FULL_T, the expansions shown are those of the TOP largest weights."""
HEAT_CELLS = 16
"""Heatmaps up to this size are annotated cell by cell; larger ones are averaged over blocks."""
HEAT_BLOCKS = 32
"""A downsampled heatmap has at most this many blocks a side."""


@dataclass(frozen=True)
class Ctx:
    """The trace being reported, and how to show it."""

    trace: Trace
    s: Strings
    decimals: int
    _places: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def q(self) -> int:
        """The 1-based focus query."""
        return self.trace.query

    @property
    def t(self) -> int:
        """Number of tokens."""
        return int(self.trace.tensor("x").shape[0])

    @property
    def d(self) -> int:
        """Embedding size."""
        return int(self.trace.tensor("x").shape[1])

    def num(self, value: float) -> str:
        """A value as displayed (``fmt.num`` with the report's decimals)."""
        return fmt.shown(value, self.decimals)

    def given(self, value: float, node: str = "x") -> str:
        """An entry of input ``node`` as given: every entry of that input with the same decimals (``0.80``).

        The decimals are worked out once per node (:func:`fmt.places`), not per cell.
        """
        if node not in self._places:
            self._places[node] = fmt.places(self.trace.tensor(node), self.decimals)
        return fmt.num(value, self._places[node])

    def cell(self, step_id: str, value: float, given: bool = False) -> Num:
        """A table cell showing step ``step_id``."""
        text = self.given(value) if given else self.num(value)
        return Num(text, step_id, "" if np.isfinite(value) else "bad")

    def rounds(self, terms: Sequence[SupportsFloat], total: SupportsFloat) -> bool:
        """True when the displayed terms do not add up to the displayed total, though their exact values do.

        An edited total (its exact terms add up to something else) gets no
        rounding note: the page's summary names it instead (see :func:`unfollowed`).
        """
        values = [float(v) for v in terms]
        fin = np.finfo(np.dtype(self.trace.dtype))
        if not fmt.adds_up(values, float(total), float(fin.eps), float(fin.tiny)):
            return False
        return fmt.rounding_note(values, float(total), self.decimals)


def unfollowed(trace: Trace, s: Any) -> tuple[tuple[str, str], ...]:
    """The summary line naming values that do not follow from their inputs (none when all do)."""
    check = trace.verify()
    return () if check.ok else ((s("page.summary_unfollowed"), check.summary()),)


def focus(s: Strings, q: int, tok: str) -> tuple[tuple[str, str | Para], ...]:
    """The summary's focus query, its symbol as maths, and its token on a line of its own (a token is never maths)."""
    return (s("page.summary_query"), Para(f"$x^{{({q})}}$", math=True)), (s("page.summary_token"), tok)


def said(text: str, note: bool = False) -> Para:
    """A paragraph or caption we wrote: its ``$...$`` spans are maths, its ```...``` spans code (never a token)."""
    return Para(text, note=note, math=True)


def tex(text: str) -> str:
    """A displayed number inside a LaTeX sum: negatives in parentheses, non-finite as symbols.

    A minus sign is grouped with its number (``({-0.45})``), so that MathML
    sets it as a sign, close to the digits, not as a subtraction.
    """
    if text in ("inf", "-inf"):
        text = text.replace("inf", r"\infty")
    elif text == "nan":
        return r"\mathrm{nan}"
    return f"({{{text}}})" if text.startswith("-") else text


def alone(text: str) -> str:
    """A displayed number standing on its own after ``=`` (a total, a running sum): no parentheses.

    Parentheses keep a negative term apart from the ``+`` before it; a number
    that is the whole right-hand side needs none (``s_1 = -0.2184``, not
    ``s_1 = (-0.2184)``).  Its sign is still grouped with its digits.
    """
    out = tex(text)
    return out[1:-1] if out.startswith("(") else out


def pick_rows(t: int, q: int) -> list[int | None]:
    """Rows to list out of ``t``: all when few, else the first ones, the focus query and the last ones."""
    if t <= FULL_T:
        return list(range(t))
    return with_gaps({0, 1, 2, q - 1, t - 2, t - 1}, t)


def with_gaps(keep: Iterable[int], t: int) -> list[int | None]:
    """The sorted 0-based rows ``keep`` of ``t``, with a None wherever rows are left out (ends too)."""
    out: list[int | None] = []
    last = -1
    for r in sorted(set(keep)):
        if r - last > 1:
            out.append(None)
        out.append(r)
        last = r
    if last < t - 1:
        out.append(None)
    return out


def gaps(rows: list[int | None], t: int) -> Iterable[tuple[int | None, int]]:
    """Each shown row with the number of rows a gap (None) stands for."""
    for n, r in enumerate(rows):
        if r is not None:
            yield r, 0
            continue
        before = rows[n - 1] if n > 0 else -1
        after = rows[n + 1] if n + 1 < len(rows) else t
        assert before is not None and after is not None
        yield None, after - before - 1


def elided_row(ctx: Ctx, missing: int) -> Row:
    """The row that says how many rows were left out."""
    return Row(elided=ctx.s("common.elided_rows", n=missing))


def token(ctx: Ctx, j: int) -> Num:
    """A token label cell (untrusted text: escaped by the renderers)."""
    return Num(ctx.trace.tokens[j], cls="label")


def index(j: int) -> Num:
    """A 1-based row number cell."""
    return Num(str(j + 1), cls="label")


def rows_table(
    ctx: Ctx, anchor: str, caption: str | Para, node: str, symbol: str, given: bool = False, row: str = "j"
) -> Table:
    """A T x d node (``x``, ``z``) as a table: a row per token (some left out when many), a column per component.

    ``symbol`` is the LaTeX of a column header with ``%(k)s`` for the component; ``row`` names the rows'
    index (``j`` for keys, ``i`` for queries).
    """
    m = ctx.trace.tensor(node)
    comps = elide(ctx.d)
    head = [Num(row, latex=True), Num(ctx.s("inputs.col_token"))]
    head += [Num(symbol % {"k": k + 1}, latex=True) if k is not None else Num("⋯") for k in comps]
    rows = []
    for i, missing in gaps(pick_rows(ctx.t, ctx.q), ctx.t):
        if i is None:
            rows.append(elided_row(ctx, missing))
            continue
        cells = [
            ctx.cell(f"{node}[{i + 1},{k + 1}]", float(m[i, k]), given) if k is not None else Num("⋯") for k in comps
        ]
        rows.append(Row((index(i), token(ctx, i), *cells), focus=i == ctx.q - 1))
    notes = (Para(ctx.s("pairs.rows_elided"), note=True),) if ctx.t > FULL_T else ()
    return Table(anchor, caption, tuple(head), tuple(rows), notes)


def heatmap_svg(
    ctx: Ctx,
    name: str,
    matrix: np.ndarray,
    hrefs: list[list[str]] | None = None,
    hidden: np.ndarray | None = None,
    doors: Callable[[], list[list[str]] | None] | None = None,
) -> tuple[str, bool]:
    """SVG of a (queries x keys) matrix with the focus row outlined; True when it had to be averaged over blocks.

    The matrix need not be square: cross-attention has as many rows as
    queries and as many columns as keys, and a generation step with a
    key/value cache has fewer queries than keys (its rows are then the newest
    tokens, the last of the keys).  Rows and columns are labelled with the
    tokens, or with their 1-based positions where there are more of them than
    tokens (cross-attention's keys come from another sequence).  Up to
    :data:`HEAT_CELLS` rows and columns every cell is annotated (and linked to
    ``hrefs`` when given, grey where ``hidden`` marks a masked key, and a door to the step ``doors`` names); a
    larger matrix shows means over at most
    :data:`HEAT_BLOCKS` blocks each way, of rows and of columns separately.
    ``doors`` is asked for the cells' step ids only then: a T = 512 matrix
    shows blocks, and its 262,144 ids would be written for nothing.
    """
    m = np.asarray(matrix, dtype=np.float64)
    t, c = m.shape
    titles = (ctx.s("figures.key"), ctx.s("figures.query"))
    n = len(ctx.trace.tokens)
    start = c - t if 0 < t < c <= n else 0  # fewer queries than keys among the tokens: a cache's newest tokens
    focus = ctx.q - 1 - start
    picked = focus if 0 <= focus < t else None
    if t <= HEAT_CELLS and c <= HEAT_CELLS:
        cells = [[ctx.num(v) for v in row] for row in m]
        keys, rows = _ticks(ctx, 0, c), _ticks(ctx, start, t)
        ids = doors() if doors is not None else None
        svg = heat.heatmap(name, m, cells, keys, picked, hrefs, *titles, row_ticks=rows, hidden=hidden, doors=ids)
        return svg, False
    br, bc = math.ceil(t / HEAT_BLOCKS), math.ceil(c / HEAT_BLOCKS)
    nr, nc = math.ceil(t / br), math.ceil(c / bc)
    pad = np.full((nr * br, nc * bc), np.nan)
    pad[:t, :c] = m
    blocks = np.nanmean(pad.reshape(nr, br, nc, bc), axis=(1, 3))
    return heat.heatmap(name, blocks, None, None, None if picked is None else picked // br, None, *titles), True


def _ticks(ctx: Ctx, start: int, n: int) -> list[str]:
    """Labels of ``n`` rows or columns from token ``start`` (0-based): the tokens, or 1-based positions.

    Positions where the tokens run out (cross-attention's keys, from another
    sequence than the tokens label): never tokens for some and numbers for others.
    """
    tokens = ctx.trace.tokens
    if start + n <= len(tokens):
        return list(tokens[start : start + n])
    return [str(k + 1) for k in range(start, start + n)]
