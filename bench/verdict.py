"""One way for every bench to say whether a figure met its target: ``target < 0.5 s: ok`` or ``MISSED``.

The word ``MISSED`` is what a reader (and a grep of a CI log) looks for, so
every bench prints it the same way, in capitals, on the figure's own line.
"""

from __future__ import annotations


def verdict(ok: bool, target: str) -> str:
    """``target <target>: ok`` or ``target <target>: MISSED``."""
    return f"target {target}: {'ok' if ok else 'MISSED'}"
