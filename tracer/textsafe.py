"""Strings a student controls, made safe for a terminal and for a spreadsheet.

A student's file name, class name, docstring, exception message or printed
output can carry terminal escape sequences (``\\x1b[2J`` clears the teacher's
screen, ``\\x1b]8;;`` hides a link) or a spreadsheet formula (``=HYPERLINK(…)``
in a CSV cell runs when the sheet is opened).  :func:`printable` strips the
control characters (keeping newlines and tabs); :func:`cell` quotes a CSV
cell that a spreadsheet would read as a formula.  HTML escaping is Jinja2's
(autoescape on) or :func:`html.escape`; JSON's is :mod:`json`'s.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(
    "\x1b\\[[0-?]*[ -/]*[@-~]"  # CSI sequences: colours, cursor moves, clearing the screen
    "|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?"  # OSC sequences: titles, hyperlinks
    "|[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # other controls, bidi overrides
)


def printable(text: str) -> str:
    """``text`` without terminal control characters or escape sequences (newlines and tabs kept)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


def cell(value: object) -> str:
    """A CSV cell's text: printable, and quoted with a leading ``'`` when it would start a formula."""
    text = printable(str(value)).replace("\n", " ")
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") or text[:1] == "\uff1d":
        return "'" + text
    return text
