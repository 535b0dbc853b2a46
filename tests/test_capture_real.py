"""Attention in the styles of fifteen public projects (tests/capture_corpus_real*.py), captured and reported.

Each runner: the output under capture is torch's bit for bit; the fresh
trace verifies clean; every attention is found, its weights read (queries,
keys) as ``i, j`` whatever the layout (sequence first, batch·heads merged,
keys from a cache, additive scores, one query per RNN step), with the
right heads; the report draws each attention's weights as heatmaps, one per
head, and raises no false alarm.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import tracer
from tests import capture_corpus_real_more as more
from tracer.core.trace import Node, Trace
from tracer.present import report
from tracer.present.captured import attentions, role
from tracer.present.views.nodes import anchor, upright

RUNNERS = tuple(more.HEADS)
BANNER = "Not following from their inputs"


def _module(name: str):  # type: ignore[no-untyped-def]
    real = importlib.import_module("tests.capture_corpus_real")
    return real if hasattr(real, name) else more


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {name: tracer.trace_torch(getattr(_module(name), name)) for name in RUNNERS}


def _weights(t: Trace, attention: list[Node]) -> Node:
    """The attention's weights, upright: per head where the code has them so."""
    ws = [upright(n) for n in attention if role(t, attention, n) == "weights"]
    return next((w for w in ws if "h" in w.axes), ws[0])


@pytest.mark.parametrize("name", RUNNERS)
def test_capture_changes_nothing_and_verifies_clean(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    torch.manual_seed(0)
    assert np.array_equal(t.tensor(t.meta["output"]), getattr(_module(name), name)().detach().numpy())
    result = t.verify()
    assert result.ok, result.summary()


@pytest.mark.parametrize("name", RUNNERS)
def test_each_attention_reads_queries_by_keys_with_its_heads(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    found = attentions(t)
    count, heads = more.HEADS[name]
    assert len(found) == count, [[n.name for n in a] for a in found]
    shapes = more.SHAPES.get(name, [(more.T, more.T)] * count)
    for a, shape in zip(found, shapes, strict=True):
        assert {"scores", "weights", "context"} <= {role(t, a, n) for n in a}, name
        w = _weights(t, a)
        assert w.axes[-2:] == ("i", "j") and set(w.axes[:-2]) <= {"b", "h", "n"}, (w.name, w.axes)
        assert w.value.shape[-2:] == shape, (w.name, w.value.shape)
        assert (w.value.shape[w.axes.index("h")] if "h" in w.axes else 1) == heads, (w.name, w.axes)


@pytest.mark.parametrize("name", RUNNERS)
def test_the_report_draws_every_attention_per_head_and_no_false_alarm(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    files = report.build(t, "en")
    assert BANNER not in files["index.md"].decode()
    _, heads = more.HEADS[name]
    for a in attentions(t):
        w = _weights(t, a)
        per_head = heads > 1 and "h" in w.axes
        figs = [f"fig-{anchor(w.name)}-h{h}.svg" for h in range(1, heads + 1)] if per_head else []
        for fig in figs or [f"fig-{anchor(w.name)}.svg"]:
            assert fig in files, (fig, sorted(f for f in files if f.startswith("fig-")))
        assert f"fig-{anchor(w.name)}-h{heads + 1}.svg" not in files


def test_a_sequence_first_attention_is_drawn_queries_down() -> None:
    t = tracer.trace_torch(more.labml)
    (a,) = attentions(t)
    w = next(n for n in a if n.op == "softmax")
    assert w.axes == ("i", "j", "b", "h")  # as the code holds it: (T, T, batch, heads)
    drawn = upright(w)
    assert drawn.axes == ("b", "h", "i", "j")
    assert np.array_equal(drawn.value[0, 1], w.value[:, :, 0, 1])  # head 2's matrix, a query per row
    assert np.allclose(drawn.value.sum(axis=-1), 1.0)  # each row (one query) sums to one over the keys
    assert t.tokens == ["t1", "t2", "t3", "t4", "t5"]  # the input is (T, B, d): its first axis becomes the queries
    svg = report.build(t, "en", formats=("md",))[f"fig-{anchor(w.name)}-h2.svg"].decode()
    assert all(f">{tok}<" in svg for tok in t.tokens)


def test_the_token_axis_is_the_one_that_becomes_the_queries() -> None:
    from tracer.record.capture.rows import token_axis

    t = tracer.trace_torch(more.labml)
    assert token_axis(t.nodes, "x") == 0  # sequence first
    batch_first = tracer.trace_torch(importlib.import_module("tests.capture_corpus_real").vit)
    assert token_axis(batch_first.nodes, "x") == 1
    merged = tracer.trace_torch(more.d2l_multihead)  # heads merged into rows by index arithmetic: not followed
    assert token_axis(merged.nodes, "queries") is None and len(merged.tokens) == more.T
    assert token_axis(t.nodes, "no such node") is None
