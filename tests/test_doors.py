"""The panels' data a page embeds (views/doors.py): what it holds, how much, and that it cannot break out."""

from __future__ import annotations

import json
import re

import pytest

from tracer.api import trace_lesson
from tracer.present import report
from tracer.present.display import bundle
from tracer.present.strings import Strings
from tracer.present.views import doors
from tracer.present.views.model import Num, Row, Section, Table

DATA = re.compile(r'<script type="application/json" id="attn-trace-doors">(.*?)</script>', re.S)


def _page(lesson: str = "simple", lang: str = "en") -> str:
    return report.build(trace_lesson(lesson), lang, formats=("html",))["index.html"].decode("utf-8")


def _data(page: str) -> dict[str, object]:
    m = DATA.search(page)
    assert m is not None
    out: dict[str, object] = json.loads(m.group(1))
    return out


@pytest.mark.parametrize("lesson", ["simple", "causal"])
def test_every_number_shown_is_in_the_data_with_its_equation_and_inputs(lesson: str) -> None:
    page = _page(lesson)
    data = _data(page)
    ids = data["ids"]
    assert isinstance(ids, list) and isinstance(data["s"], list) and len(ids) == len(data["s"])
    shown = set(re.findall(r'data-id="([^"]+)"', page))
    assert shown and shown <= set(ids)  # every table cell, equation and heatmap cell can be opened
    trace = trace_lesson(lesson)
    row = dict(zip(ids, data["s"], strict=True))
    for sid in ("omega[2,1]", "alpha[2,3]") if lesson == "simple" else ("alpha[2,1]",):
        op, value, said, inputs, more = row[sid]
        assert data["ops"][op] == trace[sid].op
        assert value == said.rsplit("= ", 1)[1]  # the equation ends in the value shown
        assert [ids[i] for i in inputs] == list(trace[sid].inputs)[: doors.MAX_INPUTS]
        assert more == max(0, len(trace[sid].inputs) - doors.MAX_INPUTS)


def test_the_walk_back_reaches_the_embeddings() -> None:
    data = _data(_page())
    ids, steps = data["ids"], data["s"]
    assert isinstance(ids, list) and isinstance(steps, list)
    at = {sid: n for n, sid in enumerate(ids)}
    todo, seen = [at["z[2,1]"]], set()
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += [i for i in steps[n][3] if isinstance(i, int)]
    assert {"x[1,1]", "x[2,3]"} <= {ids[n] for n in seen}


def test_the_data_is_bounded_and_counts_what_it_leaves_out() -> None:
    trace = trace_lesson("simple")
    sections = (Section("s", "t", (Table("t", "c", (Num("h"),), (Row((Num("1", "z[2,1]"),)),)),)),)
    small = doors.data(trace, sections, 4, Strings("en"))
    assert small["ids"][0] == "z[2,1]"
    limit = doors.LIMIT
    try:
        doors.LIMIT = 3
        cut = doors.data(trace, sections, 4, Strings("en"))
    finally:
        doors.LIMIT = limit
    assert len(cut["ids"]) == 3
    assert any(isinstance(i, str) for row in cut["s"] for i in row[3])  # inputs beyond the limit: ids, no door


def test_nothing_in_the_data_can_close_its_script_element() -> None:
    words = {f"door.{k}": "</script><script>alert(1)</script>&amp;" for k in doors.WORDS}
    text = doors.embedded(trace_lesson("simple"), (), 4, Strings("en", words))
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["w"]["close"] == "</script><script>alert(1)</script>&amp;"  # the same words, escaped


def test_the_panel_speaks_the_page_language() -> None:
    assert _data(_page(lang="zh"))["w"]["close"] == "关闭"
    assert _data(_page(lang="en"))["w"]["inputs"] == "Computed from"


def test_fragment_and_jupyter_display_degrade_to_plain_numbers() -> None:
    """No script runs there: the numbers stay text, with no door data and no dead buttons."""
    frag = report.build(trace_lesson("simple"), "en", formats=("html",), fragment=True)["fragment.html"].decode()
    assert "attn-trace-doors" not in frag and "<button" not in frag and "<script" not in frag
    shown = bundle(trace_lesson("simple"), None, None)["text/html"]
    assert "attn-trace-doors" not in shown and "<button" not in shown and "<script" not in shown
    assert "0.9544" in shown or "0.2379" in shown  # the numbers themselves are still there
