"""The diagnosis catalogue: common mistakes, each a hypothesis tested against the student's tensors.

An entry predicts what the student's run would hold if they had made that
mistake (computed from the reference's own values, :mod:`variants`) and looks
for the prediction among the student's tensors.  Entries are tried in this
order, only those that apply to the stage of the first divergence; the first
one borne out is the diagnosis.  Each has one sentence, the message
``diagnosis.<code>`` of the message tables (its ``{name}`` fields filled from
the hit's details), and names the reference steps involved.  ``docs/check.md`` lists them.
A lesson's own mistakes (its check description's ``mistakes``) come after
them (:func:`entries`), said by the lesson's own table.
"""

from __future__ import annotations

from tracer.compare.check import cachemistakes as K
from tracer.compare.check import published as P
from tracer.compare.check import rotations as R
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.lessons import SPECS, Spec
from tracer.compare.check.mistakes import MISTAKES
from tracer.errors import InputError

__all__ = ["BY_CODE", "CATALOGUE", "STRUCTURE", "Entry", "diagnose", "entries", "entry"]

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


def own(spec: Spec) -> tuple[Entry, ...]:
    """Lesson ``spec``'s own mistakes, each an :class:`Entry` (anything else in its description is one line)."""
    wrong = [e for e in spec.mistakes if not isinstance(e, Entry)]
    if wrong:
        raise InputError(f"lesson {spec.name!r} lists a mistake that is not an Entry: {wrong[0]!r}")
    return tuple(e for e in spec.mistakes if isinstance(e, Entry))


def entries(spec: Spec) -> tuple[Entry, ...]:
    """The hypotheses tried for lesson ``spec``, in order: the catalogue's, then the lesson's own."""
    return (*CATALOGUE, *own(spec))


def entry(code: str, lesson: str) -> Entry:
    """The entry of mistake ``code`` as lesson ``lesson`` knows it: its own first, then the catalogue's."""
    mine = own(SPECS[lesson]) if lesson in SPECS else ()
    found = next((e for e in mine if e.code == code), None) or BY_CODE.get(code)
    if found is None:
        raise KeyError(f"lesson {lesson!r} knows no mistake {code!r}")
    return found


def diagnose(c: Context, stages: list[str]) -> Hit | None:
    """The first hypothesis for one of ``stages`` (:func:`entries`) that the student's tensors bear out."""
    for e in entries(c.spec):
        if set(stages) & set(e.stages):
            hit = e.test(c)
            if hit is not None:
                return Hit(hit.seen, hit.steps, hit.detail, e.code, hit.where)
    return None
