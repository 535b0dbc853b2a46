"""Several pages in one process share their work: counted, not timed.

``attn-trace report --lesson all --lang all`` builds eighteen pages in one
process.  Three things are made once and reused, and each is counted here:
a template is compiled once (not once per page), a lesson's doors data is
made once for its two languages (only the panel's words differ), and an id
looked up twice in a trace is parsed once.
"""

from __future__ import annotations

import numpy as np
import pygments
import pytest
from jinja2 import Environment

import tracer
from tracer.core import ids, portable
from tracer.lessons.simple import page as walkthrough
from tracer.present import report
from tracer.present.render import env
from tracer.present.strings import Strings
from tracer.present.views import doors


def _count(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    calls = [0]
    real = getattr(owner, name)

    def counted(*a: object, **k: object) -> object:
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_pages_in_two_languages_share_templates_and_doors(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracer.trace_lesson("causal")
    report.build(trace, "en")  # anything compiled before this point is compiled for good
    compiled = _count(monkeypatch, Environment, "compile")
    made = _count(monkeypatch, doors, "equation")
    en = report.build(trace, "en")
    zh = report.build(trace, "zh")
    assert compiled[0] == 0  # the second and third page compile no template
    assert made[0] == 0  # the doors' equations were written for the first page only
    assert en["index.html"] != zh["index.html"]
    assert b"attn-trace-doors" in zh["index.html"]


def test_an_id_looked_up_again_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracer.trace_self_attention()
    parsed = _count(monkeypatch, ids, "parse")
    first = trace["omega[2,1]"]
    again = trace["omega[2,1]"]
    assert parsed[0] == 1
    assert again.id == first.id and again.value == first.value
    with pytest.raises(tracer.StepNotFound):
        trace["omega[9,1]"]  # a bad id is refused every time, and not remembered
    with pytest.raises(tracer.StepNotFound):
        trace["omega[9,1]"]
    assert parsed[0] == 3


def test_an_input_a_step_names_is_found_without_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step writes its inputs' ids from where they point; looking one up afterwards reads no id."""
    trace = tracer.trace_self_attention()
    step = trace["omega[2,1]"]
    parsed = _count(monkeypatch, ids, "parse")
    named = list(step.reads()[:2])  # written from the reads' boxes: omega[2,1].p[1], omega[2,1].p[2]
    assert [trace[i].value for i in named] == [trace.node("omega.p").value[1, 0, k] for k in range(2)]
    assert [trace[i].id for i in step.inputs] == list(step.inputs)
    assert parsed[0] == 0


def test_a_large_page_parses_each_number_it_shows_once_and_no_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doors of a T = 64 page: thousands of steps embedded, and only the page's own ids read as text.

    Every other id the panels hold (inputs, inputs of inputs) was written by
    the trace from where it points, so it is never parsed back; before, each
    embedded input was written and then parsed again (three times as many).
    """
    inputs = np.random.default_rng(0).random((64, 16)).round(2)
    trace = portable.shown(tracer.trace_self_attention(inputs))
    page = walkthrough.page(trace, report.narrative_of(trace, "en"))
    doors._MADE.clear()  # made again below, counted
    shown = set(doors.shown(page.sections))
    trace._found.clear()  # as in a fresh process: nothing looked up yet
    parsed = _count(monkeypatch, ids, "parse")
    data = doors.data(trace, page.sections, 4, Strings("en"))
    assert len(data["ids"]) > 3 * len(shown)  # most of the embedded steps are inputs the page does not show
    assert parsed[0] <= len(shown)


def test_the_same_code_is_highlighted_once_for_two_languages(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracer.trace_lesson("causal")
    env._highlighted.cache_clear()
    lexed = _count(monkeypatch, pygments, "highlight")
    report.build(trace, "en", formats=("html",))
    first = lexed[0]
    report.build(trace, "zh", formats=("html",))
    assert first > 0 and lexed[0] == first  # the Chinese page shows the same code, highlighted already
