"""The picture of the tutorial's idea: dot products, their softmax, and the weighted sum, for the focus query."""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.present.figures.diagrams import flow
from tracer.present.figures.ideas import short
from tracer.present.figures.scene import Picture
from tracer.present.strings import Strings


def idea(trace: Trace, s: Strings) -> Picture:
    """The focus query's scores, weights and context vector, drawn from ``omega``, ``alpha`` and ``z``."""
    q = trace.query
    row = np.asarray(trace.tensor("omega")[q - 1], dtype=np.float64)
    weights = np.asarray(trace.tensor("alpha")[q - 1], dtype=np.float64)
    z = np.asarray(trace.tensor("z")[q - 1], dtype=np.float64)
    heads = (s("idea.flow_scores"), s("idea.flow_weights"), s("idea.flow_sum"))
    scene = flow(row, weights, z, trace.tokens, heads)
    best = int(np.argmax(weights))
    said = {"t": len(trace.tokens), "q": q, "token": trace.tokens[q - 1], "best": trace.tokens[best]}
    alt = s("idea.flow_alt", top=short(float(weights[best])), **said)
    return Picture(scene, s("idea.flow_title"), alt, s("idea.flow_caption", q=q))
