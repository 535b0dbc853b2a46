"""Writes through indexing are captured: the book's loops that fill ``torch.empty`` entry by entry.

The first functions are the chapter's loop forms, written as a student
copies them; the rest write slices, numbers, twice into one entry, between
reads, and through ``copy_``, on tensors of distinct values, so an entry that
named the wrong source would show a different value.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import tracer
from tests import book_attention as book
from tracer.core.fmt import num
from tracer.present.explain import explain

inputs = book.inputs


def scores_for_journey() -> torch.Tensor:
    query = inputs[1]
    attn_scores_2 = torch.empty(inputs.shape[0])
    for i, x_i in enumerate(inputs):
        attn_scores_2[i] = torch.dot(x_i, query)
    attn_weights_2 = torch.softmax(attn_scores_2, dim=0)
    context_vec_2 = torch.zeros(query.shape)
    for i, x_i in enumerate(inputs):
        context_vec_2 += attn_weights_2[i] * x_i
    return context_vec_2


def all_pairs() -> torch.Tensor:
    attn_scores = torch.empty(6, 6)
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)
    attn_weights = torch.softmax(attn_scores, dim=-1)
    return attn_weights @ inputs


def written_twice(x: torch.Tensor) -> torch.Tensor:
    b = torch.zeros(4)
    b[1] = x[0, 0]
    b[1] = x[0, 1]
    return b


def slices(x: torch.Tensor) -> torch.Tensor:
    b = torch.ones(3, 4)
    b[:, 1:3] = x[:, :2] + 1
    b[0, ::2] = 5.0
    c = b * 2  # reads the buffer between writes
    b[2] = 0
    return b + c


def rows(x: torch.Tensor) -> torch.Tensor:
    b = torch.empty(3, 4)
    for i in range(3):
        b[i] = x[i] * 3
    return b


def running(x: torch.Tensor) -> torch.Tensor:
    b = torch.zeros(3, 4)
    total = torch.zeros(())
    for i in range(3):
        b[i] += x[i]
        total = total + b.sum()
    return total


def broadcast(x: torch.Tensor) -> torch.Tensor:
    b = torch.zeros(3, 4)
    b[1:, :] = x[0] * 2
    b[0, :] = x[2, :1]
    return b


def stepped(x: torch.Tensor) -> torch.Tensor:
    b = torch.zeros(7)
    b[1::3] = x[0, :2]
    return b


def copied(x: torch.Tensor) -> torch.Tensor:
    b = torch.empty(3, 4)
    b.copy_(x * 2)
    return b


FORMS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    f.__name__: f for f in (written_twice, slices, rows, running, broadcast, stepped, copied)
}


def check_writes(t: tracer.Trace) -> int:
    """Every entry of every write node names one source, with its value; returns how many were checked."""
    checked = 0
    for step in t.steps():
        if step.node.op == "write":
            ins = step.inputs
            assert len(ins) == 1, (step.id, ins)
            assert t[ins[0]].value == step.value, (step.id, ins[0])
            checked += 1
    return checked


def test_the_journey_loop_writes_each_score_from_its_dot_product() -> None:
    t = tracer.trace_torch(scores_for_journey)
    assert t.meta["opaque"] == []
    scores = t.tensor("attn_scores_2")
    assert [num(float(v), 4) for v in scores] == ["0.9544", "1.4950", "1.4754", "0.8434", "0.7070", "1.0865"]
    for i in range(6):  # each written entry is torch's own dot product, bit for bit
        assert scores[i] == torch.dot(inputs[i], inputs[1]).item()
        assert t.tensor(f"attn_scores_2.dot{f'_{i + 1}' if i else ''}") == scores[i]
    assert check_writes(t) == 6
    assert np.array_equal(t.tensor("attn_weights_2"), torch.softmax(torch.tensor(scores), dim=0).numpy())
    assert np.array_equal(t.tensor(t.meta["output"]), scores_for_journey().numpy())
    assert [num(float(v), 4) for v in t.tensor(t.meta["output"])] == ["0.4419", "0.6515", "0.5683"]


def test_explaining_a_written_score_shows_its_products() -> None:
    t = tracer.trace_torch(scores_for_journey)
    head = explain(t, "attn_scores_2[1]").splitlines()[0]
    assert head == (
        "attn_scores_2[1] = attn_scores_2.dot = Σ_k inputs.unbind[k] × query[k]"
        " = 0.4300×0.5500 + 0.1500×0.8700 + 0.8900×0.6600 = 0.2365 + 0.1305 + 0.5874 = 0.9544"
    )
    assert t["attn_scores_2[1]"].stage == "attn_scores_2"


def all_contexts() -> torch.Tensor:
    """Every context vector, row by row, with the book's ``+=`` loop into ``torch.zeros``."""
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    ctx = torch.zeros(6, 3)
    for i in range(6):
        for j in range(6):
            ctx[i] += weights[i, j] * inputs[j]
    return ctx


def test_explaining_a_row_written_long_ago_skips_the_copies() -> None:
    # ctx (the zeros, named after the variable they are stored in) is re-written 36 times, ctx_2 … ctx_37;
    # row 2 last changed at the 12th write: explain goes straight there
    t = tracer.trace_torch(all_contexts)
    assert t.meta["output"] == "ctx_37" and t.node("ctx").op == "input"
    assert explain(t, "ctx_37[2,1]").splitlines()[:2] == [
        "ctx_37[2,1] = ctx_13[2,1] = ctx.add_12[1] = ctx_12.getitem[1] + ctx.mul_12[1] = 0.4340 + 0.0079 = 0.4419",
        "  op: write    stage: ctx",
    ]


def test_all_pairs_agree_with_the_lesson() -> None:
    t = tracer.trace_torch(all_pairs)
    lesson = tracer.trace_lesson("simple")
    assert t.meta["opaque"] == []
    assert check_writes(t) == 36
    assert np.array_equal(t.tensor("attn_scores"), lesson.tensor("omega"))
    np.testing.assert_allclose(t.tensor(t.meta["output"]), lesson.tensor("z"), rtol=2e-6, atol=2e-7)
    assert np.array_equal(t.tensor(t.meta["output"]), all_pairs().numpy())
    head = explain(t, "attn_scores[2,1]").splitlines()[0]
    assert head.endswith("= 0.5500×0.4300 + 0.8700×0.1500 + 0.6600×0.8900 = 0.2365 + 0.1305 + 0.5874 = 0.9544")


@pytest.mark.parametrize("form", FORMS)
def test_each_written_entry_names_its_source(form: str) -> None:
    x = torch.arange(1, 13, dtype=torch.float32).reshape(3, 4) / 7
    fn = FORMS[form]
    t = tracer.trace_torch(fn, x)
    assert t.meta["opaque"] == []
    assert np.array_equal(t.tensor(t.meta["output"]), fn(x).numpy())
    assert check_writes(t) >= 1


def test_reads_between_writes_see_the_values_written_so_far() -> None:
    x = torch.arange(1, 13, dtype=torch.float32).reshape(3, 4) / 7
    t = tracer.trace_torch(running, x)
    sums = [n for n in t.nodes if n.op == "sum" and n.name.endswith(".sum")]
    want = [x[: i + 1].sum() for i in range(3)]
    assert len(sums) == 3
    for node, w in zip(sums, want, strict=True):
        np.testing.assert_allclose(node.value, w.item(), rtol=1e-6)
    assert t.tensor(t.meta["output"]) == running(x).item()


def test_a_write_through_a_tensor_index_is_opaque_and_listed(capsys: pytest.CaptureFixture[str]) -> None:
    def masked(x: torch.Tensor) -> torch.Tensor:
        b = torch.zeros(3, 4)
        b[x > 1] = 1.0
        return b * 2

    x = torch.arange(1, 13, dtype=torch.float32).reshape(3, 4) / 7
    t = tracer.trace_torch(masked, x)
    assert "__setitem__" in t.meta["opaque"]
    assert "recorded as opaque steps: __setitem__" in capsys.readouterr().err
    assert np.array_equal(t.tensor(t.meta["output"]), masked(x).numpy())


def test_written_traces_survive_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = tracer.trace_torch(slices, torch.arange(1, 13, dtype=torch.float32).reshape(3, 4) / 7)
    t.save(tmp_path / "t.json")
    back = tracer.load(tmp_path / "t.json")
    assert tracer.diff(t, back).equal
    assert check_writes(back) == check_writes(t)
    assert not t.verify().wrong
