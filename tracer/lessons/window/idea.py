"""The picture of the sliding-window lesson's idea: the band of keys each query may see, over the weight grid."""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.present.facts import join
from tracer.present.figures.ideas import legend_words, masked
from tracer.present.figures.scene import Picture
from tracer.present.strings import Strings


def idea(trace: Trace, s: Strings) -> Picture:
    """The window's weights shaded over the band the mask leaves; every key outside it grey."""
    seen = np.asarray(trace.tensor("mask.hide")) == 0
    weights = np.asarray(trace.tensor("window.alpha"), dtype=np.float64)
    q, t, w = trace.query, len(trace.tokens), int(trace.meta["window"])
    scene = masked(weights, seen, trace.tokens, q, legend_words(s))
    keys = join([j + 1 for j in range(t) if seen[q - 1, j]], s.lang)
    said = {"t": t, "q": q, "token": trace.tokens[q - 1], "w": w, "w1": w - 1, "keys": keys}
    return Picture(scene, s("idea.band_title"), s("idea.band_alt", **said), s("idea.band_caption", w=w))
