"""Layout ops keep element provenance: every entry of a moved tensor names the one entry it came from.

Captured on tensors of distinct values, so an entry that named the wrong
source would show a different value.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import tracer
from tracer.core.trace import Trace


def distinct(*shape: int) -> torch.Tensor:
    return torch.arange(1, 1 + int(np.prod(shape)), dtype=torch.float32).reshape(shape)


CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "split heads": lambda x: x.view(2, 3, 2, 2).transpose(1, 2),
    "join heads": lambda x: x.view(2, 3, 2, 2).transpose(1, 2).contiguous().view(2, 3, 4),
    "reshape flat": lambda x: x.reshape(-1),
    "reshape odd": lambda x: x.reshape(4, 6),
    "T of a row block": lambda x: x[0].T,
    "permute": lambda x: x.permute(2, 0, 1),
    "getitem": lambda x: x[1, 1:, ::2],
    "getitem none": lambda x: x[None, :, -1],
    "unsqueeze expand": lambda x: x[:, :1].expand(2, 3, 4),
    "squeeze": lambda x: x[:, :1, :].squeeze(1),
    "cat": lambda x: torch.cat([x, x * 2], dim=1),
    "stack": lambda x: torch.stack([x[0], x[1]], dim=1),
    "chunk": lambda x: x.chunk(2, dim=-1)[1],
    "split": lambda x: x.split([1, 3], dim=-1)[1],
    "unbind": lambda x: x.unbind(1)[2],
    "flatten": lambda x: x.flatten(1),
    "mT": lambda x: x.mT,
}


LAYOUT = {"view", "reshape", "transpose", "permute", "getitem", "unsqueeze", "expand", "squeeze", "cat", "stack"}
LAYOUT |= {"chunk", "split", "unbind", "flatten"}


def check_provenance(t: Trace) -> int:
    checked = 0
    for node in t.nodes:
        if node.op not in LAYOUT:
            continue
        for step in t.steps(pattern=None):
            if step.node is not node:
                continue
            ins = step.inputs
            assert len(ins) == 1, (step.id, ins)
            assert t[ins[0]].value == step.value, (step.id, ins[0])
            checked += 1
    return checked


@pytest.mark.parametrize("case", CASES)
def test_each_entry_names_where_it_came_from(case: str) -> None:
    x = distinct(2, 3, 4)
    fn = CASES[case]
    t = tracer.trace_torch(fn, x)
    out = fn(x)
    assert np.array_equal(t.tensor(t.meta["output"]), out.numpy())
    assert t.meta["opaque"] == []
    assert check_provenance(t) >= out.numel()


@pytest.mark.parametrize("case", CASES)
def test_explain_of_a_moved_entry_prints_real_indices(case: str) -> None:
    from tracer.present.explain import explain

    t = tracer.trace_torch(CASES[case], distinct(2, 3, 4))
    for node in t.nodes:
        if node.op not in LAYOUT:
            continue
        first = t[f"{node.name}[{','.join('1' * len(node.axes))}]"] if node.axes else t[node.name]
        head = explain(t, first.id).splitlines()[0]
        assert "<" not in head and ">" not in head, head
        row = explain(t, f"{node.name}[1]").splitlines()[0] if len(node.axes) > 1 else head
        assert "<" not in row and ">" not in row, row


def test_a_slice_of_a_head_join_reads_its_fixed_indices() -> None:
    from tracer.present.explain import explain

    t = tracer.trace_torch(CASES["join heads"], distinct(2, 3, 4))
    out = t.meta["output"]
    src = t[f"{out}[2,3,4]"].inputs[0]
    assert explain(t, f"{out}[2,3,4]").splitlines()[0] == f"{out}[2,3,4] = {src} = 24.0000"
    assert explain(t, f"{out}[2]").splitlines()[0] == f"{out}[2] = {src.split('[')[0]}[2,·,·,·]"


def test_index_arithmetic_survives_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = tracer.trace_torch(CASES["join heads"], distinct(2, 3, 4))
    t.save(tmp_path / "t.json")
    back = tracer.load(tmp_path / "t.json")
    out = back.meta["output"]
    assert back[f"{out}[2,3,4]"].inputs == t[f"{out}[2,3,4]"].inputs
    assert tracer.diff(t, back).equal


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("__import__('os').getcwd()", "index"),
        ("i ** 2", "bad index expression"),
        ("(i", "bad index expression"),
        ("z+1", "is not an axis"),
    ],
)
def test_a_file_cannot_smuggle_code_in_an_index(tmp_path, expr: str, message: str) -> None:  # type: ignore[no-untyped-def]
    import json

    from tracer.core import serialize

    t = tracer.trace_torch(CASES["permute"], distinct(2, 3, 4))
    doc = serialize.to_dict(t)
    for node in doc["nodes"]:
        for a in node["args"]:
            if a.get("index"):
                a["index"][0] = expr
    doc["digest"] = serialize._digest(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(tracer.TraceFormatError, match=message):
        tracer.load(tmp_path / "bad.json")
