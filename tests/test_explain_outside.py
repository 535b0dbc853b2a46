"""``explain`` says so when a trace file's index expression reads past an operand (its equation lacks a factor).

A reference that falls outside its operand is skipped, by design for a
running sum's entry before the first and for ops that pick one operand per
entry (cat, stack, writes).  In a file from someone else it can also be a
tampered expression: ``verify`` does not count that node as following from
its inputs, and ``explain`` must not print the shortened equation as if it
were the step's.
"""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

import tracer
from tests import tinymodels as tm
from tests.hostile import seal
from tracer.cli import app
from tracer.core import serialize
from tracer.present.explain import explain
from tracer.record import registry


def _moved(doc: dict[str, Any], name: str, arg: int, index: list[str]) -> dict[str, Any]:
    node = next(n for n in doc["nodes"] if n["name"] == name)
    node["args"][arg]["index"] = index
    return doc


@pytest.mark.parametrize("lesson", registry.names())
def test_no_step_of_any_lesson_reads_past_its_operands(lesson: str) -> None:
    trace = tm.lesson_trace(lesson)
    first = {}  # one step of each node: the note is about a node's references
    for step in trace.steps():
        if step.is_element:
            first.setdefault(step.node.name, step.id)
    assert [i for i in first.values() if "reaches past" in explain(trace, i)] == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_product_reading_past_its_operand_is_noted(tmp_path: Any, lang: str) -> None:
    doc = _moved(serialize.to_dict(tracer.trace_lesson("simple")), "omega.p", 1, ["j+3", "k"])
    path = tmp_path / "moved.json"
    path.write_text(seal(doc), encoding="utf-8")
    said = CliRunner().invoke(app, ["explain", "--from", str(path), "--lang", lang, "omega[2,5].p[1]"])
    assert said.exit_code == 0, said.output
    assert ("x[8,1]" in said.output and "6×3") in said.output
    assert ("reaches past" if lang == "en" else "越界") in said.output
    inside = CliRunner().invoke(app, ["explain", "--from", str(path), "--lang", lang, "omega[2,3].p[1]"])
    assert "x[6,1]" in inside.output and "reaches past" not in inside.output and "越界" not in inside.output
    checked = CliRunner().invoke(app, ["verify", str(path)])
    assert "omega.p" in checked.output  # the note's claim: verify does not count it among those that follow


def test_a_sum_reading_past_its_terms_is_noted_and_verify_flags_it(tmp_path: Any) -> None:
    doc = _moved(serialize.to_dict(tracer.trace_lesson("simple")), "z.t", 0, ["i", "j+1"])
    path = tmp_path / "moved.json"
    path.write_text(seal(doc), encoding="utf-8")
    said = CliRunner().invoke(app, ["explain", "--from", str(path), "z[2].t[6,1]"])
    assert "reaches past" in said.output, said.output
    checked = CliRunner().invoke(app, ["verify", str(path)])
    assert "z.t" in checked.output
