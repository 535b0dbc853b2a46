"""The window and gqa pages tell the truth for any ``--window`` and ``--heads/--groups``, not only the default.

Their narratives state counts about their example (who sees whom, which head
reads which group, how wide the projections are); those come from the trace
(:mod:`tracer.present.facts`).  Each test reads the page's words against the
trace it shows, for the default and for other options.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracer
from tracer.errors import InputError
from tracer.present import facts, narrative
from tracer.present.report import narrative_of
from tracer.present.strings import LANGS
from tracer.present.views import lesson
from tracer.present.views.model import Page, Para

WINDOWS = (1, 2, 3, 5, 6, 9)
GROUPS = ({}, {"heads": 6, "groups": 3, "d_out": 12}, {"heads": 4, "groups": 1}, {"heads": 4, "groups": 4})


def words(p: Page) -> str:
    out = [p.subtitle.text if isinstance(p.subtitle, Para) else p.subtitle]
    for s in p.sections:
        out += [b.text for b in s.blocks if isinstance(b, Para)]
        out += [
            getattr(b, "caption", "") if isinstance(getattr(b, "caption", ""), str) else b.caption.text
            for b in s.blocks
        ]  # type: ignore[union-attr]
        out += [n.text.text for n in s.notes]
    return " ".join(out)


def test_lists_read_as_the_language_writes_them() -> None:
    assert facts.join([3, 4, 5], "en") == "3, 4 and 5" and facts.join([6], "en") == "6"
    assert facts.join([3, 4, 5], "zh") == "3、4、5"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("w", WINDOWS)
def test_the_window_page_says_what_its_mask_does(w: int, lang: str) -> None:
    t = tracer.trace_lesson("window", window=w)
    p = lesson.build(t, narrative.load("window", lang))
    text = words(p)
    assert "%(" not in text and "say_" not in text
    row = t.query  # the lesson's focus rule: the last query, the one its window leaves most keys behind
    seen = [int(j) + 1 for j in np.flatnonzero(t.tensor("window.alpha")[row - 1] > 0)]  # the keys it weighs
    start = "The worked row below" if lang == "en" else "下面展开的是查询"
    said = text[text.index(start) :].split("\n")[0].split(". ", 2 if lang == "en" else 1)
    said = ". ".join(said[:2]) if lang == "en" else text[text.index(start) :].split("。")[1]
    key = ("key " if len(seen) == 1 else "keys ") if lang == "en" else "键 "
    assert key + facts.join(seen, lang) in said, said
    far = [j for j in range(1, row + 1) if j not in seen]
    assert (("too far back" if lang == "en" else "离得太远") in said) == bool(far), said
    assert f"$w = {w}$" in text
    assert ("$w + 1 = " in text) == (w < len(t.tokens))  # no later rows to speak of when the window covers the text


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("opts", GROUPS, ids=lambda o: "-".join(f"{k}{v}" for k, v in o.items()) or "default")
def test_the_gqa_page_says_what_its_heads_do(opts: dict[str, int], lang: str) -> None:
    t = tracer.trace_lesson("gqa", **opts)
    p = lesson.build(t, narrative.load("gqa", lang))
    text = words(p)
    assert "%(" not in text and "say_" not in text
    h, g = int(t.meta["heads"]), int(t.meta["groups"])
    dout = t.node("q").sizes["c"]
    assert f"$H = {h}$" in text and f"$G = {g}$" in text and f"$d_{{out}} = H d_h = {dout}$" in text
    assert f"$G d_h = {t.node('k').sizes['c']}$" in text
    order = ("、" if lang == "zh" else ", ").join(str(int(v)) for v in t.tensor("group"))  # the trace's own pairing
    assert order in text
    if 1 < g < h:
        assert ("head 2 with group 2" if lang == "en" else "头 2 配上了第 2 组") in text
        assert ("Heads 1 and 2 weigh the same values" if lang == "en" else "头 1 和头 2 加权的是同样的值向量") in text
    else:  # repeat and repeat_interleave give the same order: the page must not claim they differ
        assert "head 2 with group 2" not in text and "头 2 配上了第 2 组" not in text
    assert f"nn.Linear({dout}, {dout})" in text


def test_the_default_pages_keep_their_words() -> None:
    """Filled for the default options, the narratives say what they said before they had placeholders."""
    w = narrative_of(tracer.trace_lesson("window"), "en")
    assert "token 4 no longer sees token 1, and token 6 sees only tokens 4, 5 and 6" in w.stage("mask").text
    assert "Its window holds keys 4, 5 and 6; too far back: keys 1, 2 and 3." in w.stage("normalize").text
    g = narrative_of(tracer.trace_lesson("gqa"), "zh")
    assert "头 1、2 读第 1 组，头 3、4 读第 2 组" in g.stage("heads").text


def test_other_narratives_are_taken_as_written() -> None:
    t = tracer.trace_lesson("causal")
    story = narrative.from_dict({"title": "100%", "summary": "%(w)s", "stages": {}}, "causal", "en")
    assert facts.fill(t, story) is story
    broken = narrative.load("window", "en")
    stages = dict(broken.stages)
    stages["mask"] = narrative.Stage("T", "%(nowhere)s", dict(stages["mask"].extra))
    from dataclasses import replace

    with pytest.raises(InputError, match="placeholder"):
        facts.fill(tracer.trace_lesson("window"), replace(broken, stages=stages))
