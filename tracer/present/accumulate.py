"""A context vector summed in a loop: ``context_vec_2 += attn_weights_2[i] * x_i``.

The book's first context vector is no matrix product: each weight is taken
out of the weights one at a time, multiplies its token's vector, and the
product is added to a running vector (in place, or into a row of a matrix:
``context[i] += weights[i, j] * inputs[j]``).  Captured, that is a chain of
``getitem`` (one weight), ``mul`` (weight × vector, the term), ``add`` (the
running vector) and, for a row of a matrix, ``write`` and ``getitem`` of the
row again.  :func:`accumulation` follows it from the weights: the terms,
each with the weight's position (query, key), and the last running value,
the finished context; reports draw it as the lesson draws ``z``, each
token's contribution per component.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracer.core.trace import Node, Trace

STEPS = 4096
"""Most nodes followed from one attention's weights (a long loop is still followed whole)."""


@dataclass(frozen=True)
class Accumulation:
    """The finished sum and its terms: (the weight's position, 0-based, query then key; the term's node)."""

    total: Node
    terms: tuple[tuple[tuple[int, ...], Node], ...]


def accumulation(trace: Trace, weights: Node, readers: dict[str, list[Node]] | None = None) -> Accumulation | None:
    """The context summed in a loop from single entries of ``weights``, if the code made one (else None).

    A term is a ``mul`` that reads one entry of the weights at a fixed
    position and a vector; it must be added to a running value (an ``add``
    whose other operand is the running value).  From those adds, the running
    value is followed through further adds (of the running value and
    another term), writes of it into a tensor, and rows taken from those writes;
    the last add or write in trace order is the total.  At least two terms,
    all into one running value, or there is no loop to show.
    """
    if readers is None:
        readers = {}
        for n in trace.nodes:
            for a in n.args:
                readers.setdefault(a.node, []).append(n)
    terms: list[tuple[tuple[int, ...], Node]] = []
    adds: list[Node] = []
    for pick in readers.get(weights.name, []):
        at = _position(pick, weights)
        if at is None:
            continue
        for term in readers.get(pick.name, []):
            if term.op != "mul" or len(term.args) != 2:
                continue
            grow = [a for a in readers.get(term.name, []) if a.op == "add" and len(a.args) == 2]
            if grow:
                terms.append((at, term))
                adds.append(grow[0])
    if len(terms) < 2:
        return None
    order = {n.name: k for k, n in enumerate(trace.nodes)}
    added = {t.name for _, t in terms}
    seen = {a.name: a for a in adds}
    todo = list(adds)
    while todo and len(seen) < STEPS:
        n = todo.pop()
        for r in readers.get(n.name, []):
            grows = r.op == "add" and any(a.node in added for a in r.args)  # the running value plus a term
            running = grows or r.op == "write" or (r.op == "getitem" and n.op == "write")
            if running and r.name not in seen:
                seen[r.name] = r
                todo.append(r)
    ends = [n for n in seen.values() if n.op in ("add", "write")]
    total = max(ends, key=lambda n: order[n.name])
    return Accumulation(total, tuple(terms))


def _position(pick: Node, weights: Node) -> tuple[int, ...] | None:
    """The 0-based position of the one entry of ``weights`` that ``pick`` takes (``weights[1, 2]``), else None."""
    if pick.op != "getitem" or pick.value.ndim != 0 or len(pick.args) != 1:
        return None
    index = pick.args[0].index
    if index is None or len(index) != len(weights.axes) or not all(e.isdigit() for e in index):
        return None
    return tuple(int(e) - 1 for e in index)


def asked(trace: Trace, scores: Node) -> int | None:
    """The 1-based token row of the one query a loop compared with every key, if the scores show it.

    ``attn_scores_2[i] = torch.dot(x_i, query)`` with ``query = inputs[1]``:
    every written dot product has one factor in common, and it is row 2 of
    the inputs.  None when the scores were not filled that way.
    """
    common: set[str] | None = None
    for ref in scores.args if scores.op == "write" else ():
        n = _node(trace, ref.node)
        if n is not None and n.op == "view" and len(n.args) == 1:  # a number written through ``N.put``
            n = _node(trace, n.args[0].node)
        products = _node(trace, n.args[0].node) if n is not None and n.op == "sum" and len(n.args) == 1 else None
        if products is None or len(products.args) != 2:
            return None
        mine = {a.node for a in products.args}
        common = mine if common is None else common & mine
    if not common or len(common) != 1:
        return None
    pick = _node(trace, next(iter(common)))
    index = pick.args[0].index if pick is not None and len(pick.args) == 1 else None
    fixed = [int(e) for e in index or () if e.isdigit()]
    return fixed[0] if len(fixed) == 1 and pick is not None and pick.op in ("getitem", "unbind", "select") else None


def _node(trace: Trace, name: str) -> Node | None:
    try:
        return trace.node(name)
    except KeyError:
        return None
