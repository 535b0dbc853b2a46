"""The diagnosis catalogue: common mistakes, each a hypothesis tested against the student's tensors.

An entry predicts what the student's run would hold if they had made that
mistake (computed from the reference's own values, :mod:`variants`) and looks
for the prediction among the student's tensors.  Entries are tried in this
order, only those that apply to the stage of the first divergence; the first
one borne out is the diagnosis.  Each has one sentence, the message
``diagnosis.<code>`` of the message tables (its ``{name}`` fields filled from
the hit's details), and names the reference steps involved.  ``docs/check.md`` lists them.
"""

from __future__ import annotations

from tracer.compare.check import cachemistakes as K
from tracer.compare.check import published as P
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.lessons import Mistake, Spec
from tracer.compare.check.mistakes import MISTAKES

__all__ = ["BY_CODE", "CATALOGUE", "STRUCTURE", "Entry", "diagnose", "entries", "known"]

STRUCTURE: tuple[Entry, ...] = (
    Entry(
        "grouped_query",
        ("structure",),
        lambda c: None,
    ),
    Entry(
        "latent_kv",
        ("structure",),
        lambda c: None,
    ),
    Entry(
        "sizes_ignored",
        ("structure",),
        lambda c: None,
    ),
)
"""Differences of structure, found outside the stage-by-stage comparison (they have no first divergence)."""

PUBLISHED: tuple[Entry, ...] = (
    Entry(
        "mask_inverted",
        ("mask", "scaling", "weights"),
        P.mask_inverted,
    ),
    Entry(
        "dropout_missing",
        ("dropout",),
        P.dropout_missing,
    ),
    Entry(
        "returns_weights",
        ("context", "output"),
        P.returns_weights,
    ),
    Entry(
        "scale_extra",
        ("weights", "context"),
        P.scale_extra,
    ),
    Entry(
        "context_transposed",
        ("context",),
        P.context_transposed,
    ),
    Entry(
        "mask_window",
        ("mask", "scaling", "weights"),
        P.mask_window,
    ),
    Entry(
        "flash_no_rescale",
        ("context",),
        lambda c: None,  # tested on the results by flashcheck, which calls the function at three sizes
    ),
    Entry(
        "flash_sum_only",
        ("context",),
        lambda c: None,
    ),
    Entry(
        "flash_block_max",
        ("context",),
        lambda c: None,
    ),
    Entry(
        "flash_divide_inside",
        ("context",),
        lambda c: None,
    ),
    Entry(
        "flash_tail_dropped",
        ("context",),
        lambda c: None,
    ),
)

CATALOGUE: tuple[Entry, ...] = (*MISTAKES, *PUBLISHED)
"""The engine's own entries, which know no lesson; a lesson's own mistakes (its ``Spec.mistakes``) go between them."""

BY_CODE = {e.code: e for e in (*CATALOGUE, *STRUCTURE)}

KVCACHE: tuple[Entry, ...] = tuple(Entry(code, ("generation",), lambda c: None) for code in K.MISTAKES)
"""Lesson kvcache's mistakes, tested by driving the generation (:mod:`.cachemistakes`), not on one run's tensors."""
BY_CODE.update({e.code: e for e in KVCACHE})


def entries(spec: Spec) -> tuple[Entry, ...]:
    """The entries tried for lesson ``spec``, in order: the engine's first mistakes, the lesson's own, the published."""
    return (*MISTAKES, *map(_entry, spec.mistakes), *PUBLISHED)


def _entry(m: Mistake) -> Entry:
    """A lesson's mistake as an entry (it is one already unless the lesson wrote its own kind)."""
    return m if isinstance(m, Entry) else Entry(m.code, m.stages, m.test)


def known() -> dict[str, Entry]:
    """Code -> entry for every mistake the check can name: the engine's and every installed lesson's own."""
    from tracer.compare.check.lessons import SPECS

    own = [_entry(m) for spec in SPECS.values() for m in spec.mistakes]
    return {e.code: e for e in (*CATALOGUE, *own, *STRUCTURE, *KVCACHE)}


def diagnose(c: Context, stages: list[str]) -> Hit | None:
    """The first catalogue entry for one of ``stages`` that the student's tensors bear out."""
    for entry in entries(c.spec):
        if set(stages) & set(entry.stages):
            hit = entry.test(c)
            if hit is not None:
                return Hit(hit.seen, hit.steps, hit.detail, entry.code, hit.where)
    return None
