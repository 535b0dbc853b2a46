"""What lesson window's prose says about its example: the window's width and the keys the worked row sees."""

from __future__ import annotations

from tracer.core.trace import Trace
from tracer.present.facts import join, keys_said
from tracer.present.narrative import Narrative


def facts(trace: Trace, story: Narrative) -> tuple[dict[str, object], dict[str, str]]:
    """The window's width, the worked row's keys in view, too far back and in the future."""
    t, w = len(trace.tokens), int(trace.meta["window"])
    row = min(story.node("window.alpha").row or trace.query, t)
    lang = story.lang
    seen = list(range(max(1, row - w + 1), row + 1))
    far, future = list(range(1, row - w + 1)), list(range(row + 1, t + 1))
    values: dict[str, object] = {"w": w, "t": t, "w1": w + 1, "row": row, "row_keys": keys_said(story, seen)}
    values |= {
        "row_far": keys_said(story, far) if far else "",
        "row_future": keys_said(story, future) if future else "",
    }
    values["last_keys"] = join(range(max(1, t - w + 1), t + 1), lang)
    cases = {
        "example": "all" if w >= t else "one" if w == 1 else "some",
        "row": ("far" if far else "") + ("future" if future else "") or "none",
        "later": "all" if w >= t else "some",
    }
    return values, cases
