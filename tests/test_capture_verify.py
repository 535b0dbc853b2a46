"""A fresh capture verifies clean, and an edited captured value is still named.

A library result (a BLAS ``@``, ``nn.Linear`` with its bias, a fused
attention kernel, torch's ``mean``) is kept beside its left-to-right sums;
``verify`` accepts it within the bound the maths gives (its check's bound),
never more, so a value someone changed by more than rounding is listed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tracer
from tests import book_attention as book
from tracer.core.trace import Trace


def build(t: int, d: int = 64, heads: int = 4) -> tuple[torch.nn.Module, torch.Tensor]:
    """The book's multi-head module at the benchmark's sizes (``out_proj`` has a bias)."""
    torch.manual_seed(123)
    return book.MultiHeadAttention(d, d, t, 0.0, heads), torch.rand(1, t, d)


def _edit(t: Trace, name: str, index: tuple[int, ...], by: float) -> Trace:
    nodes = []
    for n in t.nodes:
        if n.name == name:
            value = np.array(n.value)
            value[index] += by
            n = dataclasses.replace(n, value=value)
        nodes.append(n)
    return Trace(nodes, t.meta)


@pytest.mark.parametrize("runner", ["v1", "v2", "masking", "dropout", "causal", "wrapper", "mha"])
def test_every_book_fixture_verifies_clean(runner: str) -> None:
    result = tracer.trace_torch(getattr(book, runner)).verify()
    assert result.ok, result.summary()
    assert result.checked > 5


def test_a_long_sequence_with_bias_and_blas_verifies_clean() -> None:
    model, x = build(512)
    t = tracer.trace_torch(model, x)
    result = t.verify()
    assert result.ok, result.summary()
    for name in ("out_proj", "attn_scores", "context_vec.matmul", "check.out_proj"):
        assert name not in result.unchecked


def test_linear_with_bias_is_checked_with_its_bias() -> None:
    model, x = build(8)
    t = tracer.trace_torch(model, x)
    check = t.node("check.out_proj")
    assert [a.node for a in check.args] == ["out_proj", "out_proj.loop"]
    assert float(check.value) <= check.attrs["bound"] < 1e-4
    assert "check.out_proj" not in t.verify().unchecked


@pytest.mark.parametrize(("node", "by"), [("out_proj", 1e-3), ("attn_scores", 0.01), ("attn_weights", 1e-3)])
def test_an_edit_past_rounding_is_named(node: str, by: float) -> None:
    model, x = build(16)
    t = tracer.trace_torch(model, x)
    index = (0,) * t.node(node).value.ndim
    result = _edit(t, node, index, by).verify()
    assert not result.ok and result.wrong[0].node == node


def test_sdpa_with_masks_and_dropout_verifies_clean_and_an_edit_is_named() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 64, 8) for _ in range(3))
    fmask, bmask = torch.randn(64, 64), torch.rand(64, 64) > 0.3
    bmask[:, 0] = True
    for kw in ({}, {"is_causal": True}, {"attn_mask": fmask}, {"attn_mask": bmask}, {"dropout_p": 0.2}):
        t = tracer.trace_torch(lambda kw=kw: F.scaled_dot_product_attention(q, k, v, **kw))
        assert t.verify().ok, (kw, t.verify().summary())
    out = t.meta["output"]
    assert not _edit(t, out, (0, 0, 0, 0), 0.05).verify().ok


def test_mean_is_checked_within_its_bound() -> None:
    x = torch.randn(4, 300)
    t = tracer.trace_torch(lambda: x.mean(dim=-1))
    out = t.meta["output"]
    assert t.verify().ok and f"check.{out}" not in t.verify().unchecked
    assert not _edit(t, out, (1,), 1e-3).verify().ok
