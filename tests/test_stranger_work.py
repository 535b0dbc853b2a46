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
from tests.hostile import seal
from tracer.cli import app
from tracer.core import ids, limits, serialize, validate
from tracer.errors import TraceFormatError


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
    with pytest.raises(TraceFormatError, match=r"\$\.nodes: 100,001 nodes is past the limit of 100,000"):
        serialize.loads(seal(doc))
