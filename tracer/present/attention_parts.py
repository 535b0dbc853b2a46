"""Each attention in a captured trace, whatever op computed it, and the part each of its steps plays.

A report of captured code draws every attention's scores, mask, scaled
scores, weights, context and out-projection (:mod:`tracer.present.captured`);
this module finds them from the trace's structure alone, from each softmax
(or SDPA's weights) back to the sum of products that made the scores and on
to the sum that reads the weights.
"""

from __future__ import annotations

from tracer.core.trace import Node, Trace
from tracer.present.accumulate import accumulation

LAYOUT = {"view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "expand", "getitem", "cat", "stack"}
LAYOUT |= {"split", "chunk", "unbind", "flatten", "unflatten", "lookup", "permute"}

_BACK = {"masked_fill", "add", "sub", "mul", "div", "where", "tanh"}
"""Ops between the scores and the softmax (mask, scale, additive mask, Gemma's ``cap · tanh(s / cap)``)."""
_SCORES_ARG = {"where": 1}
"""The operand that carries the scores, where it is not the first: ``torch.where(mask, scores, fill)``."""
_THROUGH = {"view", "reshape", "squeeze", "unsqueeze", "cast"}
"""Ops followed through, not shown as parts: scores or weights regrouped (BLOOM's (b·h, T, T)), a scorer's
one-wide output squeezed (additive attention's ``v · tanh(…)``), scores cast to float32 for the softmax."""


def attentions(trace: Trace) -> list[list[Node]]:
    """Each attention the code computed, whatever op did it: its scores, mask, scaled scores, weights, context.

    The weights are a softmax's result (``torch.softmax``, ``F.softmax``,
    ``Tensor.softmax``) or the weights inside SDPA (``N.weights.quot``, or
    ``N.weights.safe`` where a mask left a query no key).
    From the weights, the steps that led to them are followed back to the
    sum of products that made the scores (or the tensor a loop filled with
    them, entry by entry); the context is the sum whose products read the
    weights (or their dropout), or the vector a loop summed from single
    weights (:mod:`tracer.present.accumulate`); the out-projection is the
    next linear layer.  One query's weights over the keys (axis ``j`` alone)
    are an attention too.  Each list is in trace order.
    """
    out: list[list[Node]] = []
    by = {n.name: n for n in trace.nodes}
    readers: dict[str, list[Node]] = {}
    for n in trace.nodes:
        for a in n.args:
            readers.setdefault(a.node, []).append(n)
    order = {n.name: k for k, n in enumerate(trace.nodes)}
    for w in trace.nodes:
        head = w.name.removesuffix(".weights.quot").removesuffix(".weights.safe")
        last = ".weights.safe" if head + ".weights.safe" in by else ".weights.quot"  # rows with no key: 0
        sdpa = w.name == head + last and head + ".scores" in by and head + ".weights" not in by
        if not (w.op == "softmax" or sdpa) or (len(w.axes) < 2 and w.axes != ("j",)):  # ("j",): one query's
            continue
        chain: list[Node] = [w]
        if sdpa:
            parts = ("scores", "scaled", "causal", "masked", "hide", "masked_by", "biased")
            chain += [got for p in parts if (got := by.get(f"{head}.{p}")) is not None]
        else:
            x = by.get(w.args[0].node) if w.args else None
            while x is not None and len(chain) < 6:
                if x.op in _THROUGH and len(x.args) == 1:  # BLOOM's scores viewed per batch and head: passed
                    x = by.get(x.args[0].node)
                    continue
                chain.append(x)
                if x.op == "sum" or x.op not in _BACK or not x.args:
                    break
                x = by.get(x.args[_SCORES_ARG.get(x.op, 0)].node)
        kept = [r.name for r in readers.get(w.name, []) if r.name.endswith(".kept")]  # dropout's x · mask
        used = [w.name] + [d.name for k in kept for d in readers.get(k, []) if d.attrs.get("library") == "dropout"]
        used += [r.name for u in list(used) for r in readers.get(u, []) if r.op in _THROUGH]  # (b·h, T, T) for bmm
        views = [
            r for u in used for r in readers.get(u, []) if r.op in ("view", "reshape") and {"b", "h"} <= set(r.axes)
        ]
        chain += views[:1]  # ``nn.MultiheadAttention``'s weights per batch and head
        ctx = [r.name.rsplit(".", 1)[0] for u in used for r in readers.get(u, []) if r.name.endswith((".p", ".t"))]
        if sdpa:
            ctx.append(head)
        for c in dict.fromkeys(ctx):
            node = by.get(c)
            if node is not None:
                chain.append(node)
                chain += _projection(node, readers, by)[:1]
        summed = accumulation(trace, w, readers) if not ctx else None  # ``context += weights[i] * x_i``
        if summed is not None:
            chain.append(summed.total)
        keep = ("sum", "softmax", "add", "div", "view", "reshape", "triu", "write", *_BACK)
        picked = {n.name: n for n in chain if n.op in keep}
        out.append(sorted(picked.values(), key=lambda n: order[n.name]))
    return out


def _projection(context: Node, readers: dict[str, list[Node]], by: dict[str, Node]) -> list[Node]:
    """The linear layer whose products read the context vectors, through the views that join the heads."""
    todo, seen = [context], {context.name}
    while todo:
        n = todo.pop(0)
        for r in readers.get(n.name, []):
            owner = r.name.removesuffix(".p").removesuffix(".xw")  # ``out_proj.p``, ``out_proj.xw.p``
            got = by.get(owner)
            if r.name.endswith(".p") and got is not None and got.attrs.get("library") in ("linear", "addmm"):
                return [got]
            if r.op in LAYOUT and r.name not in seen and len(seen) < 16:
                seen.add(r.name)
                todo.append(r)
    return []


def role(trace: Trace, attention: list[Node], node: Node) -> str:
    """What ``node`` is in its attention: scores, scaled, mask, weights, context or out (the out-projection)."""
    weights = next(n for n in attention if n.op == "softmax" or n.name.endswith((".weights.quot", ".weights.safe")))
    if node is weights or (node.op in ("view", "reshape") and {"b", "h"} <= set(node.axes)):
        return "weights"  # or the weights (after their dropout) viewed per batch and head
    if node.attrs.get("library") in ("linear", "addmm") and attention.index(node) > attention.index(weights):
        return "out"
    if attention.index(node) > attention.index(weights):
        return "context"
    if node.op in ("sum", "write"):  # a write before the weights: the scores, filled entry by entry
        return "scores"
    consts = [a for a in node.args if trace.node(a.node).op == "const" or trace.node(a.node).value.ndim == 0]
    if node.op in ("mul", "div") and consts:
        return "scaled"
    return "mask"
