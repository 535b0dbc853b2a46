"""Text for a terminal: widths in columns (CJK characters take two) and lines wrapped at term boundaries.

A terminal is 80 columns unless told otherwise.  ``len`` counts characters,
but a Chinese character fills two columns, so columns are padded and lines
measured with :func:`width`, which follows Unicode's East Asian Width (wide
and fullwidth characters count two, combining marks none).  :func:`wrap`
breaks an equation where a teacher would: between its ``=`` steps first,
then before ``+`` or ``−`` or after a comma, never inside a number, and
indents the lines after the first.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

from tracer.core.fmt import COLUMNS

__all__ = ["COLUMNS", "fit", "pad", "width", "wrap"]

STEPS = re.compile(r"(?= = )")
"""Where an equation's steps meet: before `` = ``, the first place a line breaks."""
BREAKS = re.compile(
    r"(?= \+ | − | - )|(?<=, )|(?<=; )|(?<=\s)(?=\S)"
    r"|(?<=[\u2e80-\u9fff\uff00-\uffef])(?=[^\s，。；：、）」』])"  # between CJK characters, not before punctuation
)
"""Where a step too long for a line breaks: before `` + `` or `` − ``, after ``, `` or ``; ``, between words,
and between two Chinese characters (Chinese has no spaces)."""


def width(text: str) -> int:
    """The columns ``text`` takes in a terminal."""
    cols = 0
    for c in text:
        if unicodedata.combining(c):
            continue
        cols += 2 if unicodedata.east_asian_width(c) in "WF" else 1
    return cols


def pad(text: str, cols: int) -> str:
    """``text`` padded with spaces to ``cols`` columns (``str.ljust`` counts characters, not columns)."""
    return text + " " * max(0, cols - width(text))


def _split(text: str, at: re.Pattern[str]) -> list[str]:
    cuts = sorted({m.start() for m in at.finditer(text)} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(cuts) if a < b]


def _pack(pieces: list[str], cols: int, lead: str, out: list[str], current: str) -> str:
    """Add ``pieces`` to the lines ``out`` greedily; returns the line still open."""
    for piece in pieces:
        if current.strip() and width(current + piece.rstrip()) > cols:
            out.append(current.rstrip())
            current = lead + piece.lstrip(" ")
        else:
            current += piece
    return current


def wrap(line: str, cols: int = COLUMNS, indent: str = "    ") -> list[str]:
    """``line`` as lines of at most ``cols`` columns, continuations indented.

    Lines break between the steps of an equation (before `` = ``) first; a
    step too long for a line breaks between its terms, then between words.
    A piece longer than a line on its own (a very long id) is put on a line
    by itself rather than cut.
    """
    if width(line) <= cols:
        return [line]
    lead = indent + " " * (len(line) - len(line.lstrip(" ")))
    out: list[str] = []
    current = ""
    for step in _split(line, STEPS):
        fits = width(lead + step.strip() if current.strip() else step) <= cols  # a first step keeps its indent
        pieces = [step] if fits else _split(step, BREAKS)
        while len(pieces) > 1 and pieces[0].strip() in ("", "="):  # "=" stays with the number after it
            pieces[:2] = [pieces[0] + pieces[1]]
        current = _pack(pieces, cols, lead, out, current)
    if current.strip():
        out.append(current.rstrip())
    return out


def fit(text: str, cols: int = COLUMNS) -> str:
    """Every line of ``text`` wrapped to ``cols`` columns."""
    return "\n".join(part for line in text.split("\n") for part in wrap(line, cols))
