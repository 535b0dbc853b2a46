"""Figures of attention written as loops: one query's weights as bars, a context summed term by term.

A stage's ``bars`` list (:mod:`tracer.present.narrative`) names nodes drawn
as bars.  A sum recorded with its terms (``z`` and ``z.t``) is drawn by
:func:`tracer.present.views.worked.bars`; this module draws the two forms
the book's loops make, which have no such terms node:

- one query's weights over the keys, a vector along ``j``
  (``attn_weights_2 = torch.softmax(attn_scores_2, dim=0)``): a bar per key;
- a context vector summed in a loop (``context_vec_2 += attn_weights_2[i] *
  x_i``): the focus query's vector as stacked bars, one piece per token, its
  weight times its vector, the terms the loop added
  (:func:`tracer.present.accumulate.accumulation`), as the lesson draws
  ``z``.
"""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Node
from tracer.present.accumulate import accumulation, asked
from tracer.present.attention_parts import attentions
from tracer.present.figures import bars as figs
from tracer.present.figures.marks import sup
from tracer.present.views.lessonctx import LessonCtx
from tracer.present.views.model import Block, Figure, Para
from tracer.present.views.nodes import Part, anchor, caption
from tracer.present.views.worked import FIG_PARTS
from tracer.present.views.worked import bars as summed_with_terms


def bars(ctx: LessonCtx, node: Node) -> list[Block]:
    """The node's bars: a sum with its terms, one query's weights, or a context a loop summed (else none)."""
    if ctx.trace.get(f"{node.name}.t") is not None:
        return summed_with_terms(ctx, node)
    if node.axes == ("j",):
        return _weights(ctx, node)
    return _summed(ctx, node)


def _what(ctx: LessonCtx, node: Node) -> str:
    return caption(ctx, node, Part((), "", "")).text


def _weights(ctx: LessonCtx, node: Node) -> list[Block]:
    """One bar per key: the weight this query gives it."""
    w = np.asarray(node.value, dtype=np.float64)
    tokens = list(ctx.trace.tokens[: w.shape[0]])
    tokens += [str(n + 1) for n in range(len(tokens), w.shape[0])]  # more keys than tokens: by position
    name = f"fig-{anchor(node.name)}"
    svg = figs.grouped(name, tokens, 0, [(ctx.s("capture.weights_bars_y"), w)], ctx.s("capture.weights_bars_y"))
    top = int(np.nanargmax(w)) if np.isfinite(w).any() else 0
    alt = ctx.s("capture.weights_bars_alt", n=w.shape[0], top=ctx.num(float(w[top])), token=tokens[top])
    cap = Para(ctx.s("capture.weights_bars_caption", node=_what(ctx, node)), math=True)
    return [Figure(name, name, svg, alt, cap)]


def _summed(ctx: LessonCtx, node: Node) -> list[Block]:
    """The focus query's context vector: each token's term (weight × vector) stacked per component."""
    found = [(a, w) for a in attentions(ctx.trace) if node in a for w in a if w.op == "softmax"]
    acc = accumulation(ctx.trace, found[0][1]) if found else None
    if acc is None or acc.total.name != node.name:
        return []
    v = np.asarray(node.value, dtype=np.float64)
    two = v.ndim == 2 and node.axes[0] == "i"
    scores = [n for n in found[0][0] if n.op == "write" and n.axes == ("j",)]
    one = asked(ctx.trace, scores[0]) if scores else None  # the query a one-row loop compared with the keys
    q = min(ctx.q, v.shape[0]) if two else one
    if q is None:
        return []
    z = v[q - 1] if two else v
    if z.ndim != 1:
        return []
    by_key: dict[int, np.ndarray] = {}
    for at, term in acc.terms:
        if (len(at) == 2 and at[0] != q - 1) or len(at) not in (1, 2):
            continue  # another query's term
        t = np.asarray(term.value, dtype=np.float64).reshape(-1)
        if t.shape != z.shape:
            return []
        by_key[at[-1]] = by_key.get(at[-1], 0.0) + t
    if len(by_key) < 2:
        return []
    keys = sorted(by_key)
    terms = np.vstack([by_key[j] for j in keys])
    names = [ctx.trace.tokens[j] if j < len(ctx.trace.tokens) else str(j + 1) for j in keys]
    others = terms.shape[0] > FIG_PARTS
    if others:
        keep = FIG_PARTS - 1
        terms = np.vstack([terms[:keep], terms[keep:].sum(axis=0)])
        names = [*names[:keep], ctx.s("lesson.others")]
    name = f"fig-{anchor(node.name)}"
    comps = [ctx.s("lesson.bars_comp", c=c + 1) for c in range(z.shape[0])]
    svg = figs.stacked(name, terms, z, names, comps, ctx.s("lesson.bars_total", q=sup(f"({q})")), others)
    token = ctx.trace.tokens[q - 1] if q <= len(ctx.trace.tokens) else str(q)
    alt = ctx.s("lesson.bars_alt", q=q, token=token, what=ctx.s("lesson.bars_what"))
    cap = Para(ctx.s("lesson.bars_caption", node=_what(ctx, node), q=q), math=True)
    return [Figure(name, name, svg, alt, cap)]
