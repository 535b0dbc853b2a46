"""The picture of the trainable lesson's idea: one token projected three times, to its query, key and value."""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.present.figures.diagrams import fan
from tracer.present.figures.marks import sup
from tracer.present.figures.scene import Picture
from tracer.present.strings import Strings


def idea(trace: Trace, s: Strings) -> Picture:
    """The focus token's input, the three weight matrices and the query, key and value they give."""
    q = trace.query
    x = np.asarray(trace.tensor("x")[q - 1], dtype=np.float64)
    d, c = np.asarray(trace.tensor("W_query")).shape
    at = sup(f"({q})")
    branches = [
        (f"W^{mark}", f"{d} × {c}", [float(v) for v in np.asarray(trace.tensor(out)[q - 1])], f"{out}{at}")
        for mark, out in (("Q", "q"), ("K", "k"), ("V", "v"))
    ]
    scene = fan(f"x{at}", [float(v) for v in x], branches)
    said = {"q": q, "d": d, "c": c}
    return Picture(scene, s("idea.proj_title"), s("idea.proj_alt", **said), s("idea.proj_caption", q=q))
