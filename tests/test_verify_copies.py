"""Layout, write, mask and elementwise nodes are recomputed entry by entry (issue 24, item 5).

Each entry of a ``view``, ``transpose``, ``stack`` or ``cat`` is an exact copy
of the entry its references name; a write's entries name what was written;
``tril``, a cast to bool or a broadcast division are single exact operations.
So an edit to any of them is caught by ``verify`` and named by ``explain``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tracer
from tests import book_attention as book
from tests.hostile import seal
from tracer.cli import app
from tracer.core import recompute, serialize

RUNNERS = ("v1", "masking", "causal", "wrapper", "mha")


@pytest.fixture(scope="module")
def captured() -> dict[str, tracer.Trace]:
    return {name: tracer.trace_torch(getattr(book, name)) for name in RUNNERS}


def _edit(t: tracer.Trace, node: str, pos: int, value: float) -> dict[str, Any] | None:
    """The file of ``t`` with entry ``pos`` of ``node`` set to ``value`` (None: stored as derived, see predict)."""
    doc = serialize.to_dict(t)
    spec = next(n for n in doc["nodes"] if n["name"] == node)
    if spec["value"]["encoding"] != "list":
        return None
    spec["value"]["data"][pos] = value
    return doc


def _load(doc: dict[str, Any] | None) -> tracer.Trace:
    assert doc is not None
    return serialize.loads(seal(doc))


def test_fresh_captures_leave_no_copy_or_elementwise_node_unchecked(captured: dict[str, tracer.Trace]) -> None:
    for name, t in captured.items():
        result = t.verify()
        ops = Counter(n.op for n in t.nodes if n.name in result.unchecked)
        assert not (set(ops) & recompute.KINDS), (name, ops)
        recomputed = [n for n in t.nodes if n.op in recompute.KINDS and n.name not in result.unchecked]
        assert recomputed and not {w.node for w in result.wrong} & {n.name for n in recomputed}, name


def test_every_recomputed_kind_catches_an_edit(captured: dict[str, tracer.Trace]) -> None:
    seen = set()
    for t in captured.values():
        for node in t.nodes:
            if node.op not in recompute.KINDS or node.value.size == 0:
                continue
            doc = _edit(t, node.name, 0, float(node.value.ravel()[0]) + 0.5)
            if doc is None:  # a product or sum stored as derived: covered by tests/test_verify.py
                continue
            result = _load(doc).verify()
            assert node.name in {w.node for w in result.wrong}, (node.name, node.op)
            seen.add(node.op)
    assert {"view", "transpose", "stack", "cat", "getitem", "tril", "triu", "cast", "unsqueeze", "div"} <= seen


def test_an_edited_head_split_is_named_by_verify_and_explain(captured: dict[str, tracer.Trace], tmp_path: Path) -> None:
    path = tmp_path / "mha.json"
    path.write_text(seal(_edit(captured["mha"], "keys.view", 0, 9.0) or {}), encoding="utf-8")
    r = CliRunner().invoke(app, ["verify", str(path)])
    assert (
        r.exit_code == 1
        and "keys.view[1,1,1,1]" in r.output
        and "not recomputed" not in r.output  # the checks of the products are recomputed too
    )
    r = CliRunner().invoke(app, ["explain", "keys.view[1,1,1,1]", "--from", str(path)])
    assert r.exit_code == 0 and "not follow" in r.stderr and "keys.view[1,1,1,1]" in r.stderr, r.stderr


def test_a_write_is_checked_against_what_was_written() -> None:
    import torch

    def fill() -> torch.Tensor:
        x = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]])
        scores = torch.empty(3, 3)
        for i in range(3):
            for j in range(3):
                scores[i, j] = torch.dot(x[i], x[j])
        return scores.softmax(dim=-1)

    t = tracer.trace_torch(fill)
    writes = [n for n in t.nodes if n.op == "write"]
    assert writes and all(n.name not in t.verify().unchecked for n in writes)
    result = _load(_edit(t, writes[-1].name, 4, 7.0)).verify()
    assert writes[-1].name in {w.node for w in result.wrong}
