"""Every node's formula, plain text and inputs for one element, against expectations written by hand.

``tests/formulas/LESSON.tsv`` lists, for one representative element of each
node of each lesson (query 4, key 3, component 2, batch 2, head 1, so that
swapped axes show), the LaTeX and plain text it must read and the steps it
was computed from.  These are the oracle for the formulas: snapshots and
golden reports only say that nothing changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tracer

TABLES = Path(__file__).parent / "formulas"
OPTIONS = {"multihead": {"d_out": 4}}  # head width 2, so a head split is visible in the ids


def _rows(lesson: str) -> list[tuple[str, str, str, tuple[str, ...]]]:
    rows = []
    for line in (TABLES / f"{lesson}.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        step, latex, text, inputs = line.split("\t")
        rows.append((step, latex, text, tuple(inputs.split())))
    return rows


@pytest.fixture(scope="module")
def traces() -> dict[str, tracer.Trace]:
    return {
        lesson: tracer.trace_lesson(lesson, **OPTIONS.get(lesson, {}))
        for lesson in ("simple", "trainable", "causal", "multihead")
    }


CASES = [(lesson, *row) for lesson in ("simple", "trainable", "causal", "multihead") for row in _rows(lesson)]


@pytest.mark.parametrize(("lesson", "step", "latex", "text", "inputs"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_formula_text_and_inputs(
    traces: dict[str, tracer.Trace], lesson: str, step: str, latex: str, text: str, inputs: tuple[str, ...]
) -> None:
    got = traces[lesson][step]
    assert got.latex == latex
    assert got.text == text
    assert got.inputs == inputs


@pytest.mark.parametrize("lesson", ["simple", "trainable", "causal", "multihead"])
def test_every_node_has_an_expectation(traces: dict[str, tracer.Trace], lesson: str) -> None:
    listed = [traces[lesson][step].node.name for step, *_ in _rows(lesson)]
    assert listed == [n.name for n in traces[lesson].nodes]


def test_the_running_sum_of_exps_names_the_row_not_the_key() -> None:
    """The a9b91f2 bug: the sum's summand must use the summation index m, not the element's j."""
    t = tracer.trace_self_attention(query=2)
    assert t["stable.sum[2].s[3]"].latex == r"\sum_{m=1}^{3} e^{\omega_{2m} - m_{2}}"
    assert t["stable.sum[2].s[3]"].inputs == ("stable.sum[2].s[2]", "stable.exp[2,3]")
