"""Number formatting, in exactly one place.

Every number a report, an explanation or a listing shows goes through
:func:`num`.  The tutorial prints 4 decimals, so that is the default.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DECIMALS = 4


COLUMNS = 80
"""The width every text attn-trace prints for people fits in: help, lists, diff tables."""


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``1 value``, ``3 values``, ``1,024 values``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def num(value: float, decimals: int = DECIMALS) -> str:
    """A value with a fixed number of decimals (``0.9544``); see :func:`places` for given inputs.

    Non-finite values read ``inf``, ``-inf`` and ``nan``; negative zero reads
    as zero.  Minus signs are ASCII hyphens so the text can be parsed back.
    """
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = f"{v:.{decimals}f}"
    if text.lstrip("-").strip("0.") == "" and text.startswith("-") and v == 0:
        text = text[1:]
    return text


BIG = 1e9
"""From this size on, :func:`shown` switches to scientific notation."""


def shown(value: float, decimals: int = DECIMALS) -> str:
    """A value for a table: :func:`num`, or :func:`sci` with ``decimals`` digits once it reaches :data:`BIG`.

    An exp that has not quite overflowed (``4.2501e+36``) stays readable
    instead of printing thirty-seven digits.
    """
    v = float(value)
    if math.isfinite(v) and abs(v) >= BIG:
        return sci(v, decimals)
    return num(v, decimals)


def places(values: Any, decimals: int = DECIMALS) -> int:
    """The fewest decimals, up to ``decimals``, that show every given value as it was given.

    The tutorial's inputs (0.43, 0.80, 0.10) need 2, so they read ``0.80``
    rather than ``0.8000`` or ``0.8``; values with more digits get ``decimals``.
    The test allows a float32's own rounding (0.43 is stored as 0.4300000072).
    """
    a = np.asarray(values, dtype=np.float64).ravel()
    a = a[np.isfinite(a)]
    for n in range(decimals + 1):
        if np.all(np.abs(np.round(a, n) - a) <= 1e-6 * np.maximum(1.0, np.abs(a))):
            return n
    return decimals


def sci(value: float, digits: int = 2) -> str:
    """A small difference in scientific notation (``1.49e-08``); exact zero reads ``0``."""
    v = float(value)
    if v == 0:
        return "0"
    if not math.isfinite(v):
        return num(v)
    return f"{v:.{digits}e}"


def difference(value: float, decimals: int = DECIMALS) -> str:
    """A check's value, as precise as the report's ``decimals`` ask.

    A value the page's usual four decimals show to three significant digits
    or more (0.01 and up) prints fixed (``2.3200``, never ``2.32e+00``); a
    smaller one in scientific notation with ``decimals - 2`` digits after
    the point (two by default, ``1.49e-08``), so ``--decimals 12`` gives ten.
    """
    v = float(value)
    if math.isfinite(v) and v != 0 and abs(v) >= 10.0 ** (2 - min(decimals, DECIMALS)):
        return num(v, decimals)
    return sci(v, max(2, decimals - 2))


def adds_up(terms: list[float], total: float, eps: float = 2.0**-23, tiny: float = 2.0**-126) -> bool:
    """Whether ``terms`` add up to ``total`` within the rounding of summing them (``eps``: the dtype's).

    False for a total that was edited after it was computed: a report or an
    explanation must not then say that the exact values add up.
    """
    if not all(map(math.isfinite, [*terms, total])):
        return True  # inf and nan have notes of their own
    slack = 4 * len(terms) * eps * math.fsum(abs(t) for t in terms)
    return abs(math.fsum(terms) - total) <= slack + tiny


def rounding_note(terms: list[float], total: float, decimals: int = DECIMALS) -> bool:
    """True when the displayed terms do not add up to the displayed total (rounding shows)."""
    shown = sum(round(t, decimals) for t in terms)
    return num(shown, decimals) != num(total, decimals)


def full(value: float, digits: int = 9) -> str:
    """A value with enough significant digits to tell neighbouring float32s apart (``0.954400003``).

    ``diff`` shows A and B this way: at 4 decimals two values that differ
    beyond a float32 tolerance would often print the same.
    """
    v = float(value)
    if not math.isfinite(v):
        return num(v)
    return f"{v:.{digits}g}"


def literal(value: float, dtype: str = "float32") -> str:
    """A value as Python source that reads back to the same ``dtype`` number (shortest such: ``0.43``).

    Notebooks embed traced values this way, so a check against them is exact;
    non-finite values read ``float('inf')``, ``-float('inf')`` and ``float('nan')``.
    """
    v = float(value)
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "-float('inf')"
    typed = np.float32(v) if dtype == "float32" else np.float64(v)
    if v != 0 and not 1e-4 <= abs(v) < 1e16:
        return np.format_float_scientific(typed, unique=True, trim="0")
    return np.format_float_positional(typed, unique=True, trim="0")


_UNSEEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
"""Unicode categories a terminal acts on or a reader cannot see: controls (ESC, BEL, C1's CSI), format
characters (bidi overrides, zero-width joiners), surrogates, private-use and unassigned code points, line and
paragraph separators."""


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on, or a reader could not see, written as an escape.

    Strings from a trace file (a node's ``text`` and ``latex``, a token, a
    file name) reach the terminal through ``explain``, ``verify`` and the
    status and error lines.  ``ESC [ 2 K`` would erase the line above, ``ESC ]
    52`` write the clipboard, a newline fake a line of our own.  Each such
    character becomes what Python's ``repr`` writes for it (``\\x1b``,
    ``\\n``, ``\\u202e``); everything else, Chinese included, is left as it is.

    >>> printable("a\\x1b[2Kb\\nc")
    'a\\\\x1b[2Kb\\\\nc'
    """
    import unicodedata

    if text.isprintable():  # the common case, with no per-character work
        return text
    out = []
    for c in text:
        if c == " " or unicodedata.category(c) not in _UNSEEN:
            out.append(c)
        else:
            out.append(repr(c)[1:-1] if c != "\\" else c)
    return "".join(out)
