"""The picture of lesson model's idea: one head among the layer's heads, the group it reads, and where it looks.

A trained model's layer has many query heads sharing a few key/value
groups; the lesson traces one of them.  The picture puts that head among
its layer's heads (outlined), joined to the group whose keys and values it
reads with its neighbours, and under it the weights its last query gives
each token of the sentence: what the rest of the page computes scalar by
scalar.  Everything is read from the trace: the sizes from ``meta.model``,
the head from ``meta`` (its group follows from the sizes), the weights from ``causal.alpha``.
"""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.lessons.model.facts import model_of, traced_head
from tracer.present.board import elide
from tracer.present.facts import join
from tracer.present.figures.diagrams import shared
from tracer.present.figures.ideas import FOCUS, LINE, MOST_CELLS, WIDTH, cell_width, cells, names, short
from tracer.present.figures.marks import INK, SIZE, blues, ink_on, width
from tracer.present.figures.scene import Box, Label, Picture, Scene
from tracer.present.strings import Strings

MOST_HEADS = 12
"""Heads drawn side by side within a phone's column; a layer with more shows the traced head's group only."""


def idea(trace: Trace, s: Strings) -> Picture:
    """The layer's query heads over their key/value groups, the traced head outlined, and its last query's weights."""
    m = model_of(trace)
    heads, groups = m["heads"], m["kv_heads"]
    r = heads // groups
    head, layer = traced_head(trace)
    group = head // r
    reads = [k // r for k in range(heads)]
    drawn = list(range(heads)) if heads <= MOST_HEADS else [k for k in range(heads) if reads[k] == group]
    shown_groups = sorted({reads[k] for k in drawn})
    scene = shared(
        [str(k) for k in drawn],
        [(s("idea.model_group", g=g), s("idea.kv")) for g in shown_groups],
        [shown_groups.index(reads[k]) for k in drawn],
        focus=drawn.index(head),
        heading=s("idea.model_heads", layer=layer),
    )
    q = trace.query
    weights = np.asarray(trace.tensor("causal.alpha")[q - 1], dtype=np.float64)
    token = trace.tokens[q - 1]
    below(scene, s("idea.model_weights", h=head, token=token), trace.tokens, weights)
    members = join([str(k) for k in range(heads) if reads[k] == group], s.lang)
    best = int(np.argmax(weights))
    said: dict[str, object] = {"layer": layer, "H": heads, "G": groups, "h": head, "g": group, "r": r}
    said["t"] = len(trace.tokens)
    said |= {"members": members, "token": token, "best": trace.tokens[best], "top": short(float(weights[best]))}
    alt = s("idea.model_alt", **said)
    return Picture(scene, s("idea.model_title"), alt, s("idea.model_caption", **said))


def below(sc: Scene, title: str, tokens: list[str], weights: np.ndarray) -> None:
    """Under the heads: ``title``, then one row per key (long sentences elided): the token, its weight, a bar."""
    y = sc.h + LINE
    sc.add(Label(4, y, title, "start", FOCUS, bold=True))
    labels = names(tokens)
    x0 = 4 + max(width(t) for t in labels) + 8
    cw = cell_width(list(weights))
    room = WIDTH - 4 - (x0 + cw + 8)
    peak = float(weights.max()) or 1.0
    y += SIZE * 0.8
    for k in elide(len(tokens), keep=MOST_CELLS, head=4, tail=3):
        if k is None:
            sc.add(Label(x0 + cw / 2, y + SIZE * 1.4, "⋮", "middle", INK))
            y += SIZE * 2
            continue
        fill = blues(float(weights[k]) / peak)
        sc.add(Label(x0 - 6, y + SIZE + SIZE * 0.35, labels[k], "end"))
        cells(sc, x0, y, [float(weights[k])], cw, fill, ink_on(fill))
        bar = room * float(weights[k])
        if bar > 0.5:
            sc.add(Box(x0 + cw + 8, y + SIZE * 0.5, bar, SIZE, fill, "", 0.0))
        y += SIZE * 2 + 2
    sc.h = y + 6
