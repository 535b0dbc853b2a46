"""A softmax over another axis than the last is explained at the right entry.

``weights = torch.softmax(scores, dim=0)`` normalizes each column, so
``weights[3,1]`` is entry 3 of ``softmax(scores[*,1])``: the numeric form
lists the column and must pick entry 3, not entry 1 (the step's last index).
The expected numbers are computed here with plain floats from the inputs.
``check``'s "yours:" line writes the student's step with the same code, so
a student who used the wrong axis is shown the right entry too.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

import tracer
from tracer.core.fmt import num
from tracer.present.checktext import text
from tracer.present.explain import equation

ROWS = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]]
CORPUS = Path(__file__).parent / "check_corpus"


def _column_softmax(j: int) -> tuple[list[float], list[float]]:
    """The scores of column ``j`` (0-based) and their softmax, in float64 from the inputs."""
    col = [sum(a * b for a, b in zip(ROWS[i], ROWS[j], strict=True)) for i in range(3)]
    exps = [math.exp(s - max(col)) for s in col]
    return col, [e / sum(exps) for e in exps]


def _captured(dim: int) -> tracer.Trace:
    def attention(x: torch.Tensor) -> torch.Tensor:
        scores = x @ x.T
        weights = torch.softmax(scores, dim=dim)
        return weights @ x

    with tracer.capture() as cap:
        attention(torch.tensor(ROWS, dtype=torch.float64))
    return cap.trace


def test_a_column_softmax_names_the_entry_along_its_column() -> None:
    t = _captured(dim=0)
    for i, j in [(3, 1), (1, 3), (2, 1)]:
        col, soft = _column_softmax(j - 1)
        listed = ", ".join(num(s) for s in col)
        expected = f"weights[{i},{j}] = softmax(scores[*,{j}])[{i}] = softmax({listed})[{i}] = {num(soft[i - 1])}"
        assert equation(t, t[f"weights[{i},{j}]"]) == expected


def test_a_row_softmax_still_names_the_key() -> None:
    t = _captured(dim=-1)
    row = [sum(a * b for a, b in zip(ROWS[2], ROWS[k], strict=True)) for k in range(3)]
    exps = [math.exp(s - max(row)) for s in row]
    listed = ", ".join(num(s) for s in row)
    assert equation(t, t["weights[3,1]"]) == (
        f"weights[3,1] = softmax(scores[3,*])[1] = softmax({listed})[1] = {num(exps[0] / sum(exps))}"
    )


def test_check_shows_the_wrong_axis_at_the_right_entry() -> None:
    from tracer.compare.check.student import load

    obj, source = load(f"{CORPUS / 'simple_softmax_dim0.py'}:self_attention")
    result = tracer.check(obj, lesson="simple", source=source)
    d = result.first_divergence
    assert d is not None and d.student_step is not None and result.student is not None
    said = " ".join(text(result).split())
    i, j = (int(n) for n in d.student_step.split("[")[1].rstrip("]").split(","))
    assert f"yours: {d.student_step} = softmax(attn_scores[*,{j}])[{i}] = softmax(" in said
    assert f")[{i}] = {num(float(result.student[d.student_step].value))}" in said
