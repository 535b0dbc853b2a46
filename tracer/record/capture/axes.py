"""Axis names for captured tensors.

A captured node's axes are named so that reports read them as the lessons
do: rows of tokens ``i``, keys ``j``, features ``k``/``c``, and leading
batch and head axes ``b`` and ``h``.  The names only have to be distinct
within a node; an op reads its operands under names of its own choosing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

FRESH = "jcdefgmnopqrstuvwxyzal"
"""Letters handed out for new axes, in order of preference."""


def default(ndim: int) -> tuple[str, ...]:
    """Names for a tensor nobody named: ``(i, k)``, ``(b, i, k)``, ``(b, h, i, k)`` …"""
    if ndim == 0:
        return ()
    if ndim == 1:
        return ("k",)
    lead = ("b", "h") if ndim >= 4 else ("b",)
    extra = tuple(f"a{n}" for n in range(max(0, ndim - 4)))
    return (*extra, *lead[: ndim - 2], "i", "k")


def fresh(used: Iterable[str], prefer: Sequence[str] = ()) -> str:
    """The first name of ``prefer``, then of :data:`FRESH`, that is not in ``used``."""
    taken = set(used)
    for name in (*prefer, *FRESH):
        if name not in taken:
            return str(name)
    n = 0
    while f"x{n}" in taken:
        n += 1
    return f"x{n}"


def unique(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` with repeats replaced by fresh names (first occurrence kept)."""
    out: list[str] = []
    for name in names:
        out.append(name if name not in out else fresh([*out, *names]))
    return tuple(out)


def placeholders(axes: Sequence[str]) -> str:
    """``<b>,<i>,<j>``: the index of one element in a text template."""
    return ",".join(f"<{a}>" for a in axes)


def ref_text(name: str, index: Sequence[str]) -> str:
    """Text of an operand entry: ``attn_scores[<b>,<i>,<j>]`` (``*`` reads a whole axis)."""
    if not index:
        return name
    parts = [a if a == "*" or a.isdigit() else f"<{a}>" for a in index]
    return f"{name}[{','.join(parts)}]"
