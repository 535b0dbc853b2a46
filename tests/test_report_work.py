"""Several pages in one process share their work: counted, not timed.

``attn-trace report --lesson all --lang all`` builds eighteen pages in one
process.  Three things are made once and reused, and each is counted here:
a template is compiled once (not once per page), a lesson's doors data is
made once for its two languages (only the panel's words differ), and an id
looked up twice in a trace is parsed once.
"""

from __future__ import annotations

import pytest
from jinja2 import Environment

import tracer
from tracer.core import ids
from tracer.present import report
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
