"""Writing a sum on the board: which of its terms are written out.

One rule for every place that writes a sum, a list of operands or a vector's
components out (``attn-trace explain``, the reports' worked equations and dot
products): up to :data:`MAX_TERMS` terms are all written; a longer one shows
its first :data:`HEAD` and last :data:`TAIL` terms around an ellipsis, which
is how a teacher writes ``x₁ + x₂ + x₃ + … + x₆₃ + x₆₄``.
"""

from __future__ import annotations

MAX_TERMS = 8
"""Sums of up to this many terms are written out in full."""
HEAD = 3
"""Terms written before the ellipsis of a longer sum."""
TAIL = 2
"""Terms written after it."""


def elide(n: int, keep: int = MAX_TERMS, head: int = HEAD, tail: int = TAIL) -> list[int | None]:
    """0-based positions to show out of ``n``: all when ``n <= keep``, else a head, a gap (None) and a tail."""
    if n <= keep:
        return list(range(n))
    return [*range(head), None, *range(n - tail, n)]


def terms(items: list[str], ellipsis: str) -> list[str]:
    """The items to write out of a sum's terms, ``ellipsis`` (``…``, ``\\cdots``) standing for the rest."""
    return [items[k] if k is not None else ellipsis for k in elide(len(items))]
