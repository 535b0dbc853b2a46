"""The picture of the key/value cache lesson's idea: the cache growing one row per generated token."""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.facts import join
from tracer.present.figures.diagrams import stacks
from tracer.present.figures.scene import Picture
from tracer.present.strings import Strings


def idea(trace: Trace, s: Strings) -> Picture:
    """One column per step of the loop: the rows its cache of keys holds after the step, the new ones in orange.

    The steps are the trace's (``meta["steps"]``: each step's first and
    last token) and each column's rows are its ``step<n>.cache.k`` node's.
    """
    steps = [(int(a), int(b)) for a, b in trace.meta["steps"]]
    columns = []
    for n, (first, last) in enumerate(steps, start=1):
        rows = trace.node(f"step{n}.cache.k").value.shape[0]
        columns.append((s("idea.step", n=n), trace.tokens[:rows], last - first + 1))
    scene = stacks(columns, lambda k: s("idea.rows", n=k), (s("idea.new_row"), s("idea.old_row")))
    sizes = join([len(rows) for _, rows, _ in columns], s.lang)
    alt = s("idea.cache_alt", n=len(steps), p=steps[0][1] - steps[0][0] + 1, sizes=sizes)
    return Picture(scene, s("idea.cache_title"), alt, s("idea.cache_caption"))
