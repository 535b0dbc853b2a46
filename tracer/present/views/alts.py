"""Alt texts for the heatmaps: what the figure shows, how it is laid out, and what stands out in it.

A screen reader reads the alt text instead of looking at the figure, so it
says in words (in the page's language, from the locale files) what a sighted
reader takes in at a glance: which matrix this is (the narrative's ``alt``
for the node, or the caller's words), that rows are queries and columns are
keys, which row is outlined and its largest entry, and, when every entry
above the diagonal is 0 or −∞, that those keys are masked.  Maths is written
as words ("minus infinity", "row 2"), never as ``α_2j`` or LaTeX.
"""

from __future__ import annotations

import math

import numpy as np

from tracer.present.views.common import Ctx


def masked(m: np.ndarray) -> str:
    """``"zero"`` or ``"minus"`` when every entry above the diagonal is 0 or −∞ (and there is one), else ``""``."""
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        return ""
    above = m[np.triu_indices(m.shape[0], k=1)]
    if np.all(above == 0.0):
        return "zero"
    if np.all(np.isneginf(above)):
        return "minus"
    return ""


def heat(ctx: Ctx, what: str, m: np.ndarray) -> str:
    """The alt text of a heatmap of ``m`` (rows: queries, columns: keys) that shows ``what``."""
    s = ctx.s
    m = np.asarray(m, dtype=np.float64)
    t, q = m.shape[0], ctx.q
    tokens = ctx.trace.tokens
    out = [s("alt.heat", what=what, t=t, c=m.shape[1])]
    if 1 <= q <= t and q <= len(tokens):
        focus = s("alt.focus", q=q, token=tokens[q - 1])
        row = m[q - 1]
        live = [j for j in range(row.size) if math.isfinite(row[j])]
        if live:
            k = max(live, key=lambda j: (row[j], -j))  # the first of equal largest values
            key = tokens[k] if k < len(tokens) else str(k + 1)
            focus += s("alt.clause") + s("alt.top", v=ctx.num(float(row[k])), k=k + 1, name=key)
        out.append(focus)
    kind = masked(m)
    if kind:
        out.append(s(f"alt.masked_{kind}"))
    stop = s("alt.stop")
    return stop.join(out) + stop.strip()
