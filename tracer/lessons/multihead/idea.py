"""The picture of the multi-head lesson's idea: one input sent to every head, and the heads' results joined."""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.present.figures.diagrams import split_join
from tracer.present.figures.marks import sup
from tracer.present.figures.scene import Picture
from tracer.present.strings import Strings


def idea(trace: Trace, s: Strings) -> Picture:
    """The wrapper's heads for the focus query of the batch's first sample: each head's z, then the concatenation."""
    q = trace.query
    x = [float(v) for v in np.asarray(trace.tensor("x")[0, q - 1])]
    z = np.asarray(trace.tensor("wrap.z")[:, 0, q - 1], dtype=np.float64)
    whole = [float(v) for v in np.asarray(trace.tensor("wrap.concat")[0, q - 1])]
    heads = [(s("idea.head", h=h + 1), [float(v) for v in z[h]]) for h in range(z.shape[0])]
    scene = split_join(f"x{sup(f'({q})')}", x, heads, s("idea.joined"), whole)
    said = {"q": q, "h": z.shape[0], "c": z.shape[1], "n": len(whole), "token": trace.tokens[q - 1]}
    return Picture(scene, s("idea.heads_title"), s("idea.heads_alt", **said), s("idea.heads_caption", q=q))
