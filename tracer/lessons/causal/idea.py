"""The picture of the causal lesson's idea: the triangle of keys each query may see, over the weight grid."""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.present.figures.ideas import legend_words, masked
from tracer.present.figures.scene import Picture
from tracer.present.strings import Strings


def idea(trace: Trace, s: Strings) -> Picture:
    """The causal weights shaded over the triangle the mask leaves; the masked cells grey."""
    seen = np.asarray(trace.tensor("mask.tril")) > 0
    weights = np.asarray(trace.tensor("causal.alpha"), dtype=np.float64)
    q, t = trace.query, len(trace.tokens)
    scene = masked(weights, seen, trace.tokens, q, legend_words(s))
    said = {"t": t, "q": q, "token": trace.tokens[q - 1], "seen": int(seen.sum()), "hidden": int((~seen).sum())}
    return Picture(scene, s("idea.triangle_title"), s("idea.triangle_alt", **said), s("idea.triangle_caption"))
