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

from tracer.compare.check import published as P
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.lessons import Mistake, Spec
from tracer.compare.check.mistakes import MISTAKES
from tracer.compare.check.structure import STRUCTURE

__all__ = ["CATALOGUE", "STRUCTURE", "Entry", "diagnose", "entries", "known"]

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
)

CATALOGUE: tuple[Entry, ...] = (*MISTAKES, *PUBLISHED)
"""The engine's own entries, which know no lesson; a lesson's own mistakes (its ``Spec.mistakes``) go between them."""


def entries(spec: Spec) -> tuple[Entry, ...]:
    """The entries tried for lesson ``spec``, in order: the engine's first mistakes, the lesson's own, the published."""
    return (*MISTAKES, *own(spec), *PUBLISHED)


def own(spec: Spec) -> tuple[Entry, ...]:
    """Lesson ``spec``'s own mistakes, as entries."""
    return tuple(map(_entry, spec.mistakes))


def _entry(m: Mistake) -> Entry:
    """A lesson's mistake as an entry (it is one already unless the lesson wrote its own kind)."""
    return m if isinstance(m, Entry) else Entry(m.code, m.stages, m.test)


def known() -> dict[str, Entry]:
    """Code -> entry for every mistake the check can name: the engine's and every installed lesson's own."""
    from tracer.compare.check.lessons import SPECS

    own = [_entry(m) for spec in SPECS.values() for m in spec.mistakes]
    return {e.code: e for e in (*CATALOGUE, *own, *STRUCTURE)}


def diagnose(c: Context, stages: list[str], tried: tuple[Entry, ...] | None = None) -> Hit | None:
    """The first entry of ``tried`` (default: :func:`entries`) for one of ``stages`` that the evidence bears out."""
    for entry in entries(c.spec) if tried is None else tried:
        if set(stages) & set(entry.stages):
            hit = entry.test(c)
            if hit is not None:
                return Hit(hit.seen, hit.steps, hit.detail, entry.code, hit.where)
    return None
