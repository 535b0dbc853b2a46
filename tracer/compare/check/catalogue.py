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
from tracer.compare.check import rotations as R
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.mistakes import MISTAKES

__all__ = ["BY_CODE", "CATALOGUE", "STRUCTURE", "Entry", "diagnose"]

CATALOGUE: tuple[Entry, ...] = (
    *MISTAKES,
    Entry(
        "rope_style_other",
        ("rope",),
        R.other_style,
    ),
    Entry(
        "rope_pairs_mixed",
        ("rope",),
        R.pairs_mixed,
    ),
    Entry(
        "rope_direction",
        ("rope",),
        R.wrong_direction,
    ),
    Entry(
        "rope_theta_exponent",
        ("rope",),
        R.theta_exponent,
    ),
    Entry(
        "rope_positions",
        ("rope",),
        R.positions_off,
    ),
    Entry(
        "rope_values",
        ("rope", "context"),
        R.values_rotated,
    ),
)

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

CATALOGUE = (
    *CATALOGUE,
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

BY_CODE = {e.code: e for e in (*CATALOGUE, *STRUCTURE)}

KVCACHE: tuple[Entry, ...] = tuple(Entry(code, ("generation",), lambda c: None) for code in K.MISTAKES)
"""Lesson kvcache's mistakes, tested by driving the generation (:mod:`.cachemistakes`), not on one run's tensors."""
BY_CODE.update({e.code: e for e in KVCACHE})


def diagnose(c: Context, stages: list[str]) -> Hit | None:
    """The first catalogue entry for one of ``stages`` that the student's tensors bear out."""
    for entry in CATALOGUE:
        if set(stages) & set(entry.stages):
            hit = entry.test(c)
            if hit is not None:
                return Hit(hit.seen, hit.steps, hit.detail, entry.code, hit.where)
    return None
