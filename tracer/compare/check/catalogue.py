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

from tracer.compare.check import published as P
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.lessons import Spec
from tracer.compare.check.mistakes import MISTAKES
from tracer.compare.check.structure import STRUCTURE
from tracer.errors import InputError

__all__ = ["CATALOGUE", "STRUCTURE", "Entry", "diagnose", "entries", "entry", "known"]

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
    """Lesson ``spec``'s own mistakes, each an :class:`Entry` (anything else in its description is one line)."""
    wrong = [e for e in spec.mistakes if not isinstance(e, Entry)]
    if wrong:
        raise InputError(f"lesson {spec.name!r} lists a mistake that is not an Entry: {wrong[0]!r}")
    return tuple(e for e in spec.mistakes if isinstance(e, Entry))


def known() -> dict[str, Entry]:
    """Code -> entry for every mistake the check can name: the engine's, every installed lesson's own, and
    the backward pass's (``check --backward``, :mod:`.gradmistakes`)."""
    from tracer.compare.check.gradmistakes import MISTAKES as BACKWARD
    from tracer.compare.check.lessons import SPECS

    mine = [e for spec in SPECS.values() for e in own(spec)]
    return {e.code: e for e in (*CATALOGUE, *mine, *STRUCTURE, *BACKWARD)}


def entry(code: str, lesson: str) -> Entry:
    """The entry of mistake ``code`` as lesson ``lesson`` knows it: its own first, then the engine's."""
    from tracer.compare.check.lessons import SPECS

    mine = own(SPECS[lesson]) if lesson in SPECS else ()
    found = next((e for e in mine if e.code == code), None) or known().get(code)
    if found is None:
        raise KeyError(f"lesson {lesson!r} knows no mistake {code!r}")
    return found


def diagnose(c: Context, stages: list[str], tried: tuple[Entry, ...] | None = None) -> Hit | None:
    """The first entry of ``tried`` (default: :func:`entries`) for one of ``stages`` that the evidence bears out."""
    for e in entries(c.spec) if tried is None else tried:
        if set(stages) & set(e.stages):
            hit = e.test(c)
            if hit is not None:
                return Hit(hit.seen, hit.steps, hit.detail, e.code, hit.where)
    return None
