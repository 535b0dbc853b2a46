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

Only the lessons listed in :data:`LESSONS` are filled; any other narrative,
a teacher's included, is taken as written (a ``%`` in it stays a ``%``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.present.narrative import Narrative, NodeText, Stage


def join(items: Sequence[object], lang: str) -> str:
    """``1, 2 and 3`` (en) or ``1、2、3`` (zh)."""
    words = [str(i) for i in items]
    if lang == "zh":
        return "、".join(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _keys(story: Narrative, keys: Sequence[int]) -> str:
    """``key 6`` or ``keys 1 and 2``, in the narrative's words (``say_keys_one``, ``say_keys_many``)."""
    said = {k: v for s in story.stages.values() for k, v in s.extra.items()}
    form = said.get("say_keys_one" if len(keys) == 1 else "say_keys_many", "%(k)s")
    return _format(form, {"k": join(keys, story.lang)})


def _window(trace: Trace, story: Narrative) -> tuple[dict[str, object], dict[str, str]]:
    """The window's width, the worked row's keys in view, too far back and in the future."""
    t, w = len(trace.tokens), int(trace.meta["window"])
    row = min(story.node("window.alpha").row or trace.query, t)
    lang = story.lang
    seen = list(range(max(1, row - w + 1), row + 1))
    far, future = list(range(1, row - w + 1)), list(range(row + 1, t + 1))
    values: dict[str, object] = {"w": w, "t": t, "w1": w + 1, "row": row, "row_keys": _keys(story, seen)}
    values |= {"row_far": _keys(story, far) if far else "", "row_future": _keys(story, future) if future else ""}
    values["last_keys"] = join(range(max(1, t - w + 1), t + 1), lang)
    cases = {
        "example": "all" if w >= t else "one" if w == 1 else "some",
        "row": ("far" if far else "") + ("future" if future else "") or "none",
        "later": "all" if w >= t else "some",
    }
    return values, cases


def _groups(trace: Trace, story: Narrative) -> tuple[dict[str, object], dict[str, str]]:
    """Heads, groups and their sizes; which heads read which group; the two repeat orders; the cache saving."""
    h, g, r, dh = (int(trace.meta[k]) for k in ("heads", "groups", "group_size", "head_dim"))
    lang = story.lang
    share = Fraction(g, h)
    values: dict[str, object] = {"H": h, "G": g, "r": r, "dh": dh, "dout": h * dh, "gdh": g * dh}
    values["share_frac"] = rf"\tfrac{{{share.numerator}}}{{{share.denominator}}}"
    comma = "、" if lang == "zh" else ", "  # a sequence, not a list of things: no "and"
    values["interleave"] = comma.join(str(k // r + 1) for k in range(h))
    values["tiled"] = comma.join(str(k % g + 1) for k in range(h))
    item = story.stage("heads").extra.get("say_reads_item", "")
    sep = story.stage("heads").extra.get("say_reads_sep", "")
    each = ({"heads": join(range(k * r + 1, k * r + r + 1), lang), "g": k + 1} for k in range(g))
    values["list"] = sep.join(_format(item, e) for e in each)
    cases = {  # filled in this order: a later variant may quote an earlier one
        "reads": "own" if r == 1 else "one" if g == 1 else "some",
        "why": "own" if r == 1 else "one",
        "order": "same" if r == 1 or g == 1 else "differ",
        "share": "all" if g == h else "some",
        "cache": "same" if g == h else "some",
        "pair": "own" if r == 1 else "some",
    }
    return values, cases


LESSONS: dict[str, Callable[[Trace, Narrative], tuple[dict[str, object], dict[str, str]]]] = {
    "window": _window,
    "gqa": _groups,
}
"""The shipped lessons whose prose speaks of their example: lesson -> its facts."""


def facts(trace: Trace, story: Narrative) -> dict[str, object]:
    """The values the narrative's placeholders take for ``trace``, the case variants already filled in."""
    values, cases = LESSONS[story.lesson](trace, story)
    extras = {k: v for s in story.stages.values() for k, v in s.extra.items() if k.startswith("say_")}
    for name, case in cases.items():
        key = f"say_{name}_{case}"
        if key not in extras:
            raise InputError(f"the {story.lang!r} narrative of {story.lesson!r} lacks {key}")
        values[name] = _format(extras[key], values)
    return values


def _format(text: str, values: dict[str, Any]) -> str:
    try:
        return text % values
    except (KeyError, ValueError, TypeError) as e:
        raise InputError(f"a narrative placeholder cannot be filled: {e} in {text[:60]!r}") from None


def fill(trace: Trace, story: Narrative) -> Narrative:
    """``story`` with its placeholders filled from ``trace`` (unchanged for a lesson not in :data:`LESSONS`).

    A captured trace is never a shipped lesson's example, whatever its
    function is called (a runner named ``gqa`` is told by the captured narrative).
    """
    if story.filled or story.lesson not in LESSONS or str(trace.meta.get("lesson")) != story.lesson:
        return story
    if trace.meta.get("captured"):
        return story
    values = facts(trace, story)

    def stage(s: Stage) -> Stage:
        extra = {k: v if k.startswith("say_") else _format(v, values) for k, v in s.extra.items()}
        notes = {k: _format(v, values) for k, v in s.notes.items()}
        return replace(s, title=_format(s.title, values), text=_format(s.text, values), extra=extra, notes=notes)

    def node(n: NodeText) -> NodeText:
        return replace(
            n, caption=_format(n.caption, values), figure=_format(n.figure, values), alt=_format(n.alt, values)
        )

    return replace(
        story,
        title=_format(story.title, values),
        summary=_format(story.summary, values),
        stages={k: stage(s) for k, s in story.stages.items()},
        nodes={k: node(n) for k, n in story.nodes.items()},
        filled=True,
    )
