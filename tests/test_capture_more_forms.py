"""Forms that used to be opaque are step by step: multi-letter einsum, SDPA with dropout, look-ups, stacked numbers.

The module variants are the book's classes with one line changed, built
under the book's seeds, and compared with the book's explicit form; the
small forms run on tensors of distinct values, so an entry that named the
wrong source would show a different value.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tracer
from tests import book_attention as book
from tracer.present.explain import explain


class MHAEinsum(book.MultiHeadAttention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, num_tokens, _ = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = torch.einsum("bhqd,bhkd->bhqk", queries, keys)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = torch.einsum("bhqk,bhkd->bqhd", attn_weights, values)
        context_vec = context_vec.reshape(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


class CausalSDPADropout(book.CausalAttention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        return F.scaled_dot_product_attention(queries, keys, values, dropout_p=self.dropout.p, is_causal=True)


def mha_einsum() -> torch.Tensor:
    x = book.batch()
    torch.manual_seed(123)
    return MHAEinsum(3, 2, x.shape[1], 0.0, num_heads=2)(x)


def sdpa_dropout() -> torch.Tensor:
    x = book.batch()
    torch.manual_seed(123)
    return CausalSDPADropout(3, 2, x.shape[1], 0.5)(x)


def causal_dropout() -> torch.Tensor:
    x = book.batch()
    torch.manual_seed(123)
    return book.CausalAttention(3, 2, x.shape[1], 0.5)(x)


def test_multi_letter_einsum_agrees_with_the_multihead_class() -> None:
    s, e = tracer.trace_torch(mha_einsum), tracer.trace_torch(book.mha)
    assert s.meta["opaque"] == []
    assert np.array_equal(s.tensor(s.meta["output"]), mha_einsum().detach().numpy())
    assert np.array_equal(s.tensor("attn_scores.p"), e.tensor("attn_scores.p"))  # the same products
    assert np.array_equal(s.tensor("attn_scores.s"), e.tensor("attn_scores.s"))
    assert np.array_equal(s.tensor("attn_weights"), e.tensor("attn_weights"))
    np.testing.assert_allclose(s.tensor(s.meta["output"]), e.tensor(e.meta["output"]), rtol=2e-6, atol=2e-7)


def test_sdpa_with_dropout_draws_the_mask_the_explicit_class_draws() -> None:
    s, e = tracer.trace_torch(sdpa_dropout), tracer.trace_torch(causal_dropout)
    assert s.meta["opaque"] == []
    assert np.array_equal(s.tensor(s.meta["output"]), sdpa_dropout().detach().numpy())
    out = s.meta["output"]
    assert np.array_equal(s.tensor(f"{out}.drop"), e.tensor("attn_weights_dropout.keep"))
    np.testing.assert_allclose(s.tensor(f"{out}.weights.dropped"), e.tensor("attn_weights_dropout"), atol=2e-7)
    np.testing.assert_allclose(s.tensor(out), e.tensor(e.meta["output"]), rtol=2e-6, atol=2e-7)
    assert s.node(out).attrs["dropout_p"] == 0.5
    assert s.node(f"check.{out}").value < 1e-6


def distinct(*shape: int) -> torch.Tensor:
    return torch.arange(1, 1 + int(np.prod(shape)), dtype=torch.float32).reshape(shape) / 7


X = distinct(2, 3, 4)
FORMS: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "einsum two summed letters": (lambda a, b: torch.einsum("ijk,jk->i", a, b), (X, X[0])),
    "einsum implicit output": (lambda a, b: torch.einsum("ij,jk", a, b), (X[0], X[1].T)),
    "einsum outer product": (lambda a, b: torch.einsum("i,j->ij", a, b), (X[0, 0], X[0, 1])),
    "einsum transpose": (lambda a: torch.einsum("ij->ji", a), (X[0],)),
    "einsum sum": (lambda a: torch.einsum("ijk->i", a), (X,)),
    "einsum full contraction": (lambda a, b: torch.einsum("ij,ij->", a, b), (X[0], X[1])),
    "einsum capitals": (lambda a, b: torch.einsum("bIJ,bJK->bIK", a, b), (X, X.transpose(1, 2))),
    "index tensor": (lambda a: a[:, torch.tensor([2, 0, 2])], (X,)),
    "index tensor 2-d": (lambda a: a[torch.tensor([[1, 0], [0, 1]])], (X,)),
    "index list": (lambda a: a[[1, 0]], (X,)),
    "negative index": (lambda a: a[torch.tensor([-1])], (X,)),
    "bool mask": (lambda a: a[a > 1.5], (X,)),
    "bool rows": (lambda a: a[:, torch.tensor([True, False, True])], (X,)),
    "stack of numbers": (lambda a: torch.stack([torch.dot(a[0], r) for r in a]), (X[0],)),
}
MOVES = {"lookup", "permute", "view", "stack"}


@pytest.mark.parametrize("form", FORMS)
def test_each_form_is_steps_with_torch_values(form: str) -> None:
    fn, args = FORMS[form]
    t = tracer.trace_torch(fn, *args)
    assert t.meta["opaque"] == []
    assert np.array_equal(t.tensor(t.meta["output"]), fn(*args).numpy())
    for step in t.steps():  # each moved or looked-up entry names the one entry it is
        if step.node.op in MOVES:
            (src,) = step.inputs
            assert t[src].value == step.value, step.id


def test_a_looked_up_entry_names_the_entry_its_index_picked() -> None:
    t = tracer.trace_torch(FORMS["index tensor"][0], X)
    out = t.meta["output"]
    assert t[f"{out}[1,2,3]"].inputs == ("a[1,1,3]",)  # index 2 of [2, 0, 2] is row 0: a[1,1,3], 1-based
    assert t[f"{out}[2,3,4]"].inputs == ("a[2,3,4]",)
    assert "<" not in explain(t, f"{out}[1,2,3]").splitlines()[0]


def test_a_stacked_number_explains_as_the_dot_product_that_made_it() -> None:
    t = tracer.trace_torch(FORMS["stack of numbers"][0], X[0])
    head = explain(t, f"{t.meta['output']}[2]").splitlines()[0]
    assert head.startswith(f"{t.meta['output']}[2] = dot_2 = Σ_k ") and head.endswith(" = 1.4286")


def test_a_write_into_a_view_is_an_opaque_step_and_later_reads_see_it() -> None:
    def rows(x: torch.Tensor) -> torch.Tensor:
        t = torch.zeros(3, 4)
        t[1][2] = x[0, 0] * 3
        return t * 2

    t = tracer.trace_torch(rows, X[0])
    assert "__setitem__ into a view" in t.meta["opaque"]
    assert np.array_equal(t.tensor(t.meta["output"]), rows(X[0]).numpy())


def test_an_in_place_change_of_a_view_is_seen_by_later_reads() -> None:
    def bump(x: torch.Tensor) -> torch.Tensor:
        t = x * 1
        row = t[0]
        row += 1
        return t * 2

    def accumulate(x: torch.Tensor) -> torch.Tensor:
        b = torch.zeros(2, 3, 4)
        for i in range(2):
            b[i] += x[i]  # the row changed in place, then written back: nothing opaque
        return b * 2

    t = tracer.trace_torch(bump, X[0])
    assert "__setitem__ into a view" in t.meta["opaque"]
    assert np.array_equal(t.tensor(t.meta["output"]), bump(X[0]).numpy())
    assert not t.verify().wrong  # every value follows from the values it names
    t = tracer.trace_torch(accumulate, X)
    assert t.meta["opaque"] == [] and not t.verify().wrong
    assert np.array_equal(t.tensor(t.meta["output"]), accumulate(X).numpy())
