"""What a lesson's prose says about its own example, read from the trace: sizes, counts, who sees whom.

A narrative that speaks of its example (``Here $w = 3$ …``, ``heads 1 and 2
read group 1``) would be false for another ``--window`` or ``--heads``.  Its
shipped files write such statements with ``%(name)s`` placeholders, and
:func:`fill` puts in the values of the trace at hand.  A statement whose
wording depends on the case (a window as wide as the text, one group for all
heads) has one variant per case in the narrative, as stage keys
``say_<name>_<case>``; :func:`facts` picks the case and the variant is filled
like the rest.  Lists are joined in the narrative's language (``3, 4 and 5``,
``3、4、5``).

The facts are the lesson's own: a lesson names a function as its ``facts``
(:class:`~tracer.record.lesson.PackagedLesson`; lessons window and gqa do)
that returns the values and the cases from the trace, using :func:`join`,
:func:`keys_said` and :func:`formatted` from here.  Only the narrative of
such a lesson, told of its own trace, is filled; any other, a teacher's
pipeline or a captured trace included, is taken as written (a ``%`` in it
stays a ``%``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.message import Message
from tracer.present.narrative import Narrative, NodeText, Stage
from tracer.record import registry
from tracer.record.lesson import page_part


def join(items: Sequence[object], lang: str) -> str:
    """``1, 2 and 3`` (en) or ``1、2、3`` (zh)."""
    words = [str(i) for i in items]
    if lang == "zh":
        return "、".join(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def keys_said(story: Narrative, keys: Sequence[int]) -> str:
    """``key 6`` or ``keys 1 and 2``, in the narrative's words (``say_keys_one``, ``say_keys_many``)."""
    said = {k: v for s in story.stages.values() for k, v in s.extra.items()}
    form = said.get("say_keys_one" if len(keys) == 1 else "say_keys_many", "%(k)s")
    return formatted(form, {"k": join(keys, story.lang)})


Facts = Callable[[Trace, Narrative], tuple[dict[str, object], dict[str, str]]]
"""A lesson's facts (its ``facts`` page part): trace and narrative -> (values, the case of each variant)."""


def facts_of(trace: Trace, story: Narrative) -> Facts | None:
    """The facts function of the lesson that recorded ``trace`` and is told by ``story``, or ``None``."""
    lesson = registry.of(trace)
    if lesson is None or lesson.name != story.lesson:
        return None
    found: Facts | None = page_part(lesson, "facts")
    return found


def facts(trace: Trace, story: Narrative) -> dict[str, object]:
    """The values the narrative's placeholders take for ``trace``, the case variants already filled in."""
    found = facts_of(trace, story)
    if found is None:
        raise InputError(Message("narrative.lesson_says_nothing_about", lesson=repr(story.lesson)))
    values, cases = found(trace, story)
    extras = {k: v for s in story.stages.values() for k, v in s.extra.items() if k.startswith("say_")}
    for name, case in cases.items():
        key = f"say_{name}_{case}"
        if key not in extras:
            raise InputError(
                Message("narrative.narrative_lacks", lang=repr(story.lang), lesson=repr(story.lesson), key=key)
            )
        values[name] = formatted(extras[key], values)
    return values


def formatted(text: str, values: dict[str, Any]) -> str:
    try:
        return text % values
    except (KeyError, ValueError, TypeError) as e:
        raise InputError(
            Message("narrative.narrative_placeholder_cannot_filled", error=str(e), text=repr(text[:60]))
        ) from None


def fill(trace: Trace, story: Narrative) -> Narrative:
    """``story`` with its placeholders filled from ``trace`` (unchanged for a lesson without ``facts``).

    A captured trace is never a shipped lesson's example, whatever its
    function is called (a runner named ``gqa`` is told by the captured narrative).
    """
    if story.filled or facts_of(trace, story) is None:
        return story
    values = facts(trace, story)

    def stage(s: Stage) -> Stage:
        extra = {k: v if k.startswith("say_") else formatted(v, values) for k, v in s.extra.items()}
        notes = {k: formatted(v, values) for k, v in s.notes.items()}
        return replace(s, title=formatted(s.title, values), text=formatted(s.text, values), extra=extra, notes=notes)

    def node(n: NodeText) -> NodeText:
        return replace(
            n, caption=formatted(n.caption, values), figure=formatted(n.figure, values), alt=formatted(n.alt, values)
        )

    return replace(
        story,
        title=formatted(story.title, values),
        summary=formatted(story.summary, values),
        stages={k: stage(s) for k, s in story.stages.items()},
        nodes={k: node(n) for k, n in story.nodes.items()},
        filled=True,
    )
