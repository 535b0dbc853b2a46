"""SDPA's bound in ``verify`` does not hide edits: a fresh capture is clean, an edit beyond the bound is named.

The fused kernel's output is held to the bound its check carries (the sums
of products, the softmax with torch's 20-unit ``exp`` and the rescaling of
its online softmax); every step of our own loop form beside it (the scores,
the stable softmax's steps, the weights) is recomputed exactly, so an edit
of one unit in the last place there is named too.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tracer
from tracer.core.trace import Trace


def _edit(t: Trace, name: str, index: tuple[int, ...], to: float) -> Trace:
    nodes = []
    for n in t.nodes:
        if n.name == name:
            value = np.array(n.value)
            value[index] = to
            n = dataclasses.replace(n, value=value)
        nodes.append(n)
    return Trace(nodes, t.meta)


@pytest.fixture(scope="module", params=[{"is_causal": True}, {"attn_mask": "bool"}, {}])
def captured(request: pytest.FixtureRequest) -> Trace:
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    kw = dict(request.param)
    if kw.get("attn_mask") == "bool":
        kw["attn_mask"] = torch.ones(16, 16, dtype=torch.bool).tril()
    return tracer.trace_torch(lambda: F.scaled_dot_product_attention(q, k, v, **kw))


def test_a_fresh_capture_verifies_clean(captured: Trace) -> None:
    result = captured.verify()
    assert result.ok, result.summary()
    out = captured.meta["output"]
    assert out not in result.unchecked  # the kernel's output is held to its check's bound


def test_an_edit_of_the_context_beyond_the_bound_is_named(captured: Trace) -> None:
    out = captured.meta["output"]
    bound = float(captured.node(f"check.{out}").attrs["bound"])
    assert 0 < bound < 1e-4
    entry = (0, 1, 5, 3)
    old = np.float32(captured.node(out).value[entry])
    edited = np.float32(old + np.float32(2 * bound))
    result = _edit(captured, out, entry, float(edited)).verify()
    assert not result.ok and result.wrong[0].node == out, result.summary()


def test_an_edit_of_one_unit_in_the_last_place_of_a_weight_is_named(captured: Trace) -> None:
    out = captured.meta["output"]
    weights = f"{out}.weights.quot"
    entry = (0, 0, 7, 2)
    old = np.float32(captured.node(weights).value[entry])
    result = _edit(captured, weights, entry, float(np.nextafter(old, np.float32(1)))).verify()
    assert not result.ok and result.wrong[0].node == weights, result.summary()
