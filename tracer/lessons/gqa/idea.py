"""The picture of the grouped-query lesson's idea: query heads reading shared key/value groups."""

from __future__ import annotations

import numpy as np

from tracer.core.trace import Trace
from tracer.present.facts import join
from tracer.present.figures.diagrams import shared
from tracer.present.figures.scene import Picture
from tracer.present.strings import Strings


def idea(trace: Trace, s: Strings) -> Picture:
    """One box per query head, one per key/value group, a line from each head to the group its ``group`` entry names."""
    reads = [int(g) - 1 for g in np.asarray(trace.tensor("group"))]
    h, g = len(reads), max(reads) + 1
    scene = shared(
        [s("idea.head", h=k + 1) for k in range(h)], [(s("idea.group", g=k + 1), s("idea.kv")) for k in range(g)], reads
    )
    pairs = join([s("idea.group_pair", h=k + 1, g=r + 1) for k, r in enumerate(reads)], s.lang)
    alt = s("idea.groups_alt", h=h, g=g, pairs=pairs)
    return Picture(scene, s("idea.groups_title"), alt, s("idea.groups_caption", h=h, g=g, r=h // g))
