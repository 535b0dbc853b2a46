"""How a number should be written, worked out without ``tracer.core.fmt``.

The report tests compare what a page shows with what these functions say it
should show.  Were the expected text built with ``fmt`` itself, a bug in
``fmt`` would be on both sides of the comparison and no test would fail, so
this module takes other roads to the same rules:

- rounding is :class:`decimal.Decimal` arithmetic on the exact binary value,
  ties to even (what ``fmt`` gets from ``format``);
- "as the inputs were given" is the shortest text that reads back to the
  stored number (numpy's ``unique`` formatting, in the node's own dtype),
  where ``fmt.places`` tests candidate roundings against a tolerance.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Context, Decimal

import numpy as np

import tracer

BIG = Decimal(10) ** 9  # from here on a table cell is in scientific notation
EXACT = Context(prec=800)  # enough digits for any double: no rounding but the one asked for


def fixed(value: float, decimals: int = 4) -> str:
    """``value`` rounded half-to-even at ``decimals`` places: ``0.9544``."""
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    exact = Decimal(v).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN, context=EXACT)
    if v == 0:  # negative zero reads as zero; a tiny negative value keeps its sign (-0.0000)
        exact = abs(exact)
    return f"{exact:f}"


def cell(value: float, decimals: int = 4) -> str:
    """A table cell: :func:`fixed`, or ``4.2501e+36`` (``decimals`` digits after the point) from 1e9 on."""
    v = float(value)
    if math.isfinite(v) and abs(Decimal(v)) >= BIG:
        mantissa = Decimal(v)
        exponent = mantissa.adjusted()
        digits = mantissa.scaleb(-exponent, EXACT).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_EVEN, EXACT)
        if abs(digits) >= 10:  # 9.99995e9 rounds up to the next power
            digits, exponent = digits / 10, exponent + 1
        return f"{digits:f}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"
    return fixed(v, decimals)


def given_places(values: object, most: int = 4) -> int:
    """The decimals the inputs were given with: the longest shortest-round-trip text, at most ``most``.

    The tutorial's 0.43 (a float32 0.4300000072) reads back from ``0.43``, so
    its inputs have 2 places; a random weight needs 8 or 9 and gets ``most``.
    """
    a = np.asarray(values)
    longest = 0
    for v in a.ravel():
        if not np.isfinite(v):
            continue
        text = np.format_float_positional(v, unique=True, trim="-")
        longest = max(longest, len(text.partition(".")[2]))
    return min(longest, most)


def shown(step: tracer.Step, decimals: int = 4) -> str:
    """How a report's table shows a step: an input with the places it was given in, the rest with ``decimals``."""
    if step.op == "input":
        return fixed(step.value, given_places(step.node.value, decimals))
    return fixed(step.value, decimals)
