"""A diff says what differs when it is not a step's value: a setting, or metadata alone, and which trace is which.

Traces computed in float32 and float64 differ first by their dtype (every
value was computed under it), so the dtype is named before any step as a
root cause; two traces that differ only in their focus query are not "0
steps differ"; a Trace given in memory is named by what it holds.
"""

from __future__ import annotations

import pytest

import tracer
from tracer.compare.diffreport import LABELS
from tracer.record.inputs import TUTORIAL_INPUTS
from tracer.testing import assert_traces_close


def test_the_dtype_is_named_as_the_first_root_cause() -> None:
    text = tracer.diff(tracer.trace_self_attention(), tracer.trace_self_attention(dtype="float64")).text()
    lines = text.splitlines()
    assert lines[2].startswith("DIFFERENT: ") and lines[3] == "the traces were computed with another dtype, overflow"
    settings = lines.index("root causes: first the settings every step was computed with (A -> B)")
    assert lines[settings + 1].split() == ["dtype", "'float32'", "->", "'float64'"]
    steps = next(n for n, line in enumerate(lines) if line.startswith("root causes (1): steps"))
    assert settings < steps  # the setting is read before the step it explains (scaled.c, 10 -> 100)
    assert "* scaled.c" in lines[steps + 2]


def test_labels_are_no_settings() -> None:
    """A focus query or other tokens change no value, so they are never given as a cause."""
    a = tracer.trace_self_attention()
    b = tracer.trace_self_attention(tokens=["a", "b", "c", "d", "e", "f"], query=3)
    text = tracer.diff(a, b).text()
    assert "root causes" not in text and "computed with another" not in text
    assert {"query", "tokens", "source"} <= LABELS and "dtype" not in LABELS


def test_a_diff_in_metadata_only_says_so() -> None:
    d = tracer.diff(tracer.trace_self_attention(), tracer.trace_self_attention(query=3))
    assert not d.equal
    verdict = d.text().splitlines()[2]
    assert verdict == f"DIFFERENT in metadata (query) only: the {d.totals.compared:,} steps compared are equal"
    assert "0 steps differ" not in d.text()


def test_a_count_of_one_is_singular() -> None:
    a = tracer.trace_self_attention(TUTORIAL_INPUTS)
    rows = [list(r) for r in TUTORIAL_INPUTS]
    rows[0][0] = 0.5
    verdict = tracer.diff(a, tracer.trace_self_attention(rows)).text().splitlines()[2]
    assert ", 1 root cause" in verdict and "1 root causes" not in verdict


def test_traces_given_in_memory_are_named_by_what_they_hold() -> None:
    a, b = tracer.trace_self_attention(), tracer.trace_self_attention(query=3, dtype="float64")
    with pytest.raises(AssertionError) as failed:
        assert_traces_close(a, b)
    lines = str(failed.value).splitlines()
    assert lines[1] == f"A: the first Trace given (lesson 'simple', query 2, float32, {len(a):,} steps)"
    assert lines[2] == f"B: the second Trace given (lesson 'simple', query 3, float64, {len(b):,} steps)"
