"""Which axis of the code's input holds the tokens: the one that becomes the queries of an attention.

Positions do not say it: most code is batch first, ``(B, T, d)``, but labml,
``nn.MultiheadAttention`` without ``batch_first`` and many RNN tutorials are
sequence first, ``(T, B, d)``.  What the code does to the axis says it: an
axis that every op passes on (a linear layer keeps its rows, a view keeps
the axes it does not split, a sum of products keeps its free axes) and that
ends as the query axis ``i`` of an attention's weights is the tokens.  The
walk follows each reader's reference to the axis: a bare name in the
reference is the reader's axis of that name.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracer.core.trace import Node

LIMIT = 20000
"""Axes visited at most per axis of the input (a trace's nodes times their axes is far less in practice)."""


def token_axis(nodes: Sequence[Node], start: str) -> int | None:
    """The axis of node ``start`` that becomes the query axis of an attention's weights, else None."""
    by = {n.name: n for n in nodes}
    readers: dict[str, list[tuple[Node, tuple[str, ...]]]] = {}
    for n in nodes:
        for ref in n.args:
            if ref.index is not None and ref.node != n.name:
                readers.setdefault(ref.node, []).append((n, tuple(ref.index)))
    node = by.get(start)
    if node is None:
        return None
    for p in range(len(node.axes)):
        seen, todo = {(start, p)}, [(start, p)]
        while todo and len(seen) < LIMIT:
            name, q = todo.pop()
            for r, index in readers.get(name, []):
                if len(index) != len(by[name].axes) or index[q] not in r.axes:
                    continue
                if index[q] == "i" and _weights(r):
                    return p
                k = (r.name, r.axes.index(index[q]))
                if k not in seen:
                    seen.add(k)
                    todo.append(k)
    return None


def _weights(node: Node) -> bool:
    return node.op == "softmax" or node.name.endswith((".weights.quot", ".weights.safe"))
