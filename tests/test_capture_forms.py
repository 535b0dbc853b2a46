"""SDPA and einsum forms of the book's attention agree with the explicit form, step for step where steps correspond.

The student variants below are the book's classes with one line changed:
``F.scaled_dot_product_attention`` for the causal head, ``torch.einsum`` for
every product of self-attention v1.  Built under the same seeds, so the
weights are the book's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tracer
from tests import book_attention as book


class CausalSDPA(book.CausalAttention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        context_vec = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)
        return context_vec


class SelfAttentionEinsum(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keys = torch.einsum("ik,kc->ic", x, self.W_key)
        queries = torch.einsum("ik,kc->ic", x, self.W_query)
        values = torch.einsum("ik,kc->ic", x, self.W_value)
        attn_scores = torch.einsum("ic,jc->ij", queries, keys)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = torch.einsum("ij,jc->ic", attn_weights, values)
        return context_vec


def sdpa() -> torch.Tensor:
    x = book.batch()
    torch.manual_seed(123)
    return CausalSDPA(3, 2, x.shape[1], 0.0)(x)


def einsum() -> torch.Tensor:
    torch.manual_seed(123)
    return SelfAttentionEinsum(3, 2)(book.inputs)


def close(a: np.ndarray, b: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-7, err_msg=what)


@pytest.mark.parametrize("runner", [sdpa, einsum])
def test_forms_change_nothing(runner) -> None:  # type: ignore[no-untyped-def]
    t = tracer.trace_torch(runner)
    assert np.array_equal(t.tensor(t.meta["output"]), runner().detach().numpy())
    assert t.meta["opaque"] == []


def test_sdpa_agrees_with_the_explicit_causal_module() -> None:
    s, e = tracer.trace_torch(sdpa), tracer.trace_torch(book.causal)
    for name in ("queries", "keys", "values"):
        assert np.array_equal(s.tensor(name), e.tensor(name)), name
    # the same products, and the same running sums, in the same order
    assert np.array_equal(s.tensor("context_vec.scores.p"), e.tensor("attn_scores.p"))
    assert np.array_equal(s.tensor("context_vec.scores.s"), e.tensor("attn_scores.s"))
    close(s.tensor("context_vec.scores"), e.tensor("attn_scores"), "scores")
    keep = np.tril(np.ones((6, 6), dtype=bool))
    close(s.tensor("context_vec.scaled")[:, keep], e.tensor("attn_weights.div")[:, keep], "scaled scores")
    assert np.array_equal(np.isinf(s.tensor("context_vec.masked")), np.isinf(e.tensor("attn_scores.masked_fill")))
    close(s.tensor("context_vec.weights.quot"), e.tensor("attn_weights"), "weights")
    close(s.tensor("context_vec"), e.tensor("context_vec"), "context vectors")
    assert s.node("context_vec").attrs["causal"] is True
    assert s.node("check.context_vec").value < 1e-6


def test_einsum_agrees_with_self_attention_v1() -> None:
    s, e = tracer.trace_torch(einsum), tracer.trace_torch(book.v1)
    for name in ("queries", "keys", "values"):
        assert np.array_equal(s.tensor(f"{name}.p"), e.tensor(f"{name}.p")), name
        assert np.array_equal(s.tensor(f"{name}.s"), e.tensor(f"{name}.s")), name
    for name in ("queries", "keys", "values", "attn_scores", "attn_weights", "context_vec"):
        close(s.tensor(name), e.tensor(name), name)
        assert s.node(name).axes == e.node(name).axes, name
    for name in ("attn_scores", "context_vec"):
        assert s.tensor(f"{name}.p").shape == e.tensor(f"{name}.p").shape
        close(s.tensor(f"{name}.p"), e.tensor(f"{name}.p"), f"{name}.p")
    assert s.node("attn_scores").attrs["code"] == "ic,jc->ij"
