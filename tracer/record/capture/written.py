"""What the axes of a tensor filled entry by entry index, read from what was written into it.

The book first writes attention as loops::

    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)

``torch.empty(6, 6)`` says nothing about its axes; the writes do.  Entry
``(i, j)`` holds a dot product whose first factor is row ``i`` of the
inputs and whose second is row ``j``: along the first axis the written
values pick successive rows of a token axis for one operand, along the
second for the other.  An axis whose position in every write is the row an
operand of the written sum of products picked is a token axis, as the two
axes of ``queries @ keys.T`` are: the first such axis holds the queries
(``i``), the second the keys (``j``).  A tensor with one such axis, filled
against the same other operand every time (``attn_scores_2[i] =
torch.dot(x_i, query)``), holds one query's scores over the keys (``j``).
Other axes keep their names.  The report then finds the attention these
loops build as it finds ``softmax(q @ k.T)``: scores, weights, heatmaps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from tracer.core.trace import Node, Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.session import Session

PICKS = {"unbind", "getitem", "split", "chunk", "select"}
"""Layout ops that can take one row of a tensor (``for x_i in inputs``, ``inputs[i]``)."""


class Written(Protocol):
    """One pending write: its region (a 0-based position or a slice per axis) and the reference to its value."""

    items: tuple[int | tuple[int, int, int], ...]
    ref: Ref


def token_axes(s: Session, writes: Sequence[Written], names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` with the axes the writes show to be queries and keys named ``i`` and ``j`` (see the module doc)."""
    found: dict[int, int] = {}  # target axis -> operand slot whose picked row is the axis's position
    slots = [_operands(s, w.ref.node) for w in writes]
    if len(writes) < 2 or any(not ops for ops in slots):
        return names
    for d in range(len(names)):
        at = [p for w in writes if isinstance(p := w.items[d], int)]
        if len(at) != len(writes) or len(set(at)) < 2:
            continue
        for m in range(2):
            picks = [_pick(s, ops[m]) if m < len(ops) else None for ops in slots]
            same = {(p[0], p[1]) for p in picks if p is not None}
            rows = all(p is not None and p[2] == a + 1 for p, a in zip(picks, at, strict=True))
            if len(same) == 1 and rows and m not in found.values():
                found[d] = m
                break
    if len(found) == 2:
        wanted = dict(zip(sorted(found), ("i", "j"), strict=True))
    elif len(found) == 1:
        (d, m) = next(iter(found.items()))
        fixed = {ops[1 - m] for ops in slots if len(ops) == 2}
        if len(fixed) != 1:  # one query against every key: the other factor never changes
            return names
        wanted = {d: "j"}
    else:
        return names
    out = list(names)
    for d, a in wanted.items():
        out[d] = a
    for d in range(len(out)):
        if d not in wanted and out[d] in wanted.values():
            out[d] = ax.fresh([*out, *names], ("k", "c", "d"))
    return tuple(out)


def renamed(ref: Ref, old: Sequence[str], new: Sequence[str]) -> Ref:
    """``ref`` with its index expressions over axes ``old`` rewritten over ``new`` (same positions)."""
    table = {a: b for a, b in zip(old, new, strict=True) if a != b}
    if not table or ref.index is None:
        return ref
    pattern = re.compile("|".join(rf"(?<![A-Za-z0-9_]){re.escape(a)}(?![A-Za-z0-9_])" for a in table))
    return Ref(ref.node, tuple(pattern.sub(lambda m: table[m.group(0)], e) for e in ref.index))


def _node(s: Session, name: str) -> Node | None:
    """The recorded node ``name`` (a recent one: searched from the end)."""
    for n in reversed(s.rec._nodes):
        if n.name == name:
            return n
    return None


def _operands(s: Session, name: str) -> tuple[str, ...]:
    """The two factors of the sum of products written (through a number's one-entry view ``N.put``), or ()."""
    n = _node(s, name)
    if n is not None and n.op == "view" and len(n.args) == 1:  # ``N.put``: a 0-d value written into one entry
        n = _node(s, n.args[0].node)
    if n is None or n.op != "sum" or len(n.args) != 1:
        return ()
    products = _node(s, n.args[0].node)
    if products is None or len(products.args) != 2:
        return ()
    return tuple(a.node for a in products.args)


def _pick(s: Session, name: str) -> tuple[str, int, int] | None:
    """(source, axis, 1-based row) when node ``name`` is one row of another node, read at a fixed position."""
    n = _node(s, name)
    if n is None or n.op not in PICKS or len(n.args) != 1 or n.args[0].index is None:
        return None
    fixed = [(p, int(e)) for p, e in enumerate(n.args[0].index) if e.isdigit()]
    return (n.args[0].node, fixed[0][0], fixed[0][1]) if len(fixed) == 1 else None
