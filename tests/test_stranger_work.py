"""Work a stranger's input can ask for is bounded (issue 24, items 13 and 15): counted, never timed.

A glob with many stars is matched without backtracking, and a trace file
with more nodes than the limit is refused before the schema looks at any.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer
from tests import tinymodels as tm
from tests.hostile import seal
from tracer.cli import app
from tracer.core import ids, limits, serialize, validate
from tracer.errors import TraceFormatError
from tracer.record import registry


def test_a_catastrophic_glob_is_matched_in_linear_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = 0
    real = ids._linear

    def counting(parts: list[str], text: str) -> bool:
        nonlocal steps
        steps += len(text) * (len("".join(parts)) + 1)
        return real(parts, text)

    monkeypatch.setattr(ids, "_linear", counting)
    pattern = "**?" * 13 + "**!"  # 39 characters: 34 s as a regular expression
    match = ids.glob_matcher(pattern)
    assert not match("a" * 39) and not match("a." * 30)
    assert 0 < steps < 10_000
    r = CliRunner().invoke(app, ["steps", pattern])
    assert r.exit_code == 2 and "no steps match" in r.output


@settings(derandomize=True, database=None, max_examples=300)
@given(
    pattern=st.lists(st.sampled_from(["*", "**", "?", "a", "b", ".", "["]), max_size=8).map("".join),
    text=st.lists(st.sampled_from(["a", "b", ".", "["]), max_size=10).map("".join),
)
def test_the_linear_matcher_agrees_with_the_regular_expression(pattern: str, text: str) -> None:
    parts = re.split(r"(\*\*|\*|\?)", pattern)
    wild = {"**": ".*", "*": "[^.]*", "?": "[^.]"}
    rx = re.compile("".join(wild.get(p, re.escape(p)) for p in parts))
    assert ids._linear([p for p in parts if p], text) == (rx.fullmatch(text) is not None)


def test_too_many_nodes_are_refused_before_the_schema_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    doc: dict[str, Any] = serialize.to_dict(tracer.trace_lesson("simple"))
    doc["nodes"] = doc["nodes"] + [doc["nodes"][0]] * (limits.MAX_NODES + 1 - len(doc["nodes"]))

    def no_schema() -> object:
        raise AssertionError("the schema ran over every node")

    monkeypatch.setattr(validate, "_validator", no_schema)
    with pytest.raises(TraceFormatError, match=r"\$\.nodes: 20,001 nodes is past the limit of 20,000"):
        serialize.loads(seal(doc))


def test_millions_of_tiny_json_values_are_refused_before_the_parser_runs(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc: dict[str, Any] = serialize.to_dict(tracer.trace_lesson("simple"))
    doc["meta"]["junk"] = [0] * (limits.MAX_JSON_ITEMS + 10)  # 4 MB of text, seconds and 100s of MB to parse
    path = tmp_path / "many.json"
    path.write_text(seal(doc))

    def no_parse(*args: object, **kwargs: object) -> object:
        raise AssertionError("the JSON parser ran")

    monkeypatch.setattr(serialize.json, "loads", no_parse)
    refused = r"'many.json' is not a readable trace file \(it spells out about 2,00\d,\d{3} JSON values"
    with pytest.raises(TraceFormatError, match=refused):
        serialize.load(path)
    r = CliRunner().invoke(app, ["verify", str(path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "past the limit of 2,000,000" in r.output


@pytest.mark.parametrize("lesson", registry.names())
def test_a_lessons_trace_file_spells_out_far_fewer_values_than_the_limit(lesson: str) -> None:
    text = serialize.dumps(tm.lesson_trace(lesson))
    assert serialize.json_items(text) == serialize.json_items(text.encode("utf-8"))
    assert serialize.json_items(text) * 100 < limits.MAX_JSON_ITEMS


def test_the_count_is_an_upper_bound_on_the_values() -> None:
    for text in ('{"a": [1, 2, {"b": []}], "c": "x,y[z{"}', "[]", "0", '[[], {}, ""]'):
        values = 0

        def walk(x: Any) -> None:
            nonlocal values
            values += 1
            for y in x.values() if isinstance(x, dict) else x if isinstance(x, list) else ():
                walk(y)

        import json

        walk(json.loads(text))
        assert serialize.json_items(text) >= values, text


def test_a_trace_too_large_for_a_file_is_refused_before_anything_is_written(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_TRACE_VALUE_BYTES", 1000)  # the tutorial's trace needs about 3 KB
    out = tmp_path / "t.json"
    r = CliRunner().invoke(app, ["trace", "-o", str(out)])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "past the 1,000 a trace file may hold: use float32, or fewer tokens or dims" in r.output
    assert not out.exists() and not list(tmp_path.iterdir())
    monkeypatch.setattr(limits, "MAX_TRACE_VALUE_BYTES", 1 << 30)
    monkeypatch.setattr(limits, "MAX_NODES", 10)
    with pytest.raises(tracer.InputError, match=r"this trace has \d+ nodes, past the 10 a trace file may hold"):
        serialize.dumps(tracer.trace_lesson("simple"))


def test_what_the_multihead_lesson_traces_its_file_can_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wrapper's products are 2 copies x 2 heads x T x T x d_out: the size check counts all four."""
    monkeypatch.setattr(limits, "MAX_CELLS", 4 * 6 * 6 * 4)  # exactly the wrapper's products at d_out = 4
    serialize.loads(serialize.dumps(tracer.trace_lesson("multihead", d_out=4)))
    monkeypatch.setattr(limits, "MAX_CELLS", 4 * 6 * 6 * 4 - 1)
    with pytest.raises(tracer.InputError, match="d_out 4 with 6 tokens of 3 dims makes tensors of 576 entries"):
        tracer.trace_lesson("multihead", d_out=4)
