"""Lesson flash's own mistakes: a blocked loop's results at every size the check calls it, each a classic slip.

The check calls the student's function at three sizes and keeps only its
results (:mod:`tracer.compare.check.flashcheck`).  Each entry here runs one
of :mod:`.online`'s loops, which make that mistake on purpose, on the same
queries, keys and values at the same sizes; the mistake is borne out when
the student's results equal its loop's at every size.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tracer.compare.check import align, flashcheck
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.lessons.flash.online import MISTAKES as LOOPS
from tracer.lessons.flash.online import Loop

STEPS = ("flash.m", "flash.c", "flash.l", "flash.o", "flash.z")
"""The lesson's steps a slip in the loop involves: the running max, its factor, the sum, the output, the result."""


def borne_out(forms: dict[str, Loop]) -> Callable[[Context], Hit | None]:
    """The test of a mistake made in any of ``forms``: the first whose results the student's equal at every size."""

    def test(c: Context) -> Hit | None:
        got = flashcheck.results(c)
        q, k, v = (np.asarray(a, dtype=np.float64) for a in flashcheck.inputs(c.trace))
        at = flashcheck.sizes(c.spec)
        for form, loop in forms.items():
            if all(g is not None and align.close(g, loop(q[:t], k[:t], v[:t], b)) for g, (t, b) in _paired(got, at)):
                t, b = at["block"]
                return Hit(None, STEPS, {"form": form, "block": str(b), "tokens": str(t), "kept": str((t // b) * b)})
        return None

    return test


def _paired(
    got: dict[str, np.ndarray | None], at: dict[str, tuple[int, int]]
) -> list[tuple[np.ndarray | None, tuple[int, int]]]:
    return [(got[run], size) for run, size in at.items()]


MISTAKES: tuple[Entry, ...] = tuple(Entry(code, ("context",), borne_out(forms)) for code, forms in LOOPS.items())
"""In the order they are tried: no rescaling, the sum alone rescaled, the block's max, a division inside, the tail."""
