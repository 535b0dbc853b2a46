"""Names of reassigned variables, unpacked tuples and ``nn.MultiheadAttention``'s steps.

A variable the code assigns again gets one id per value it holds: a layout
op of the old value extends its name (``k.view.transpose``: the same
entries, moved); any other op is ``<var>_<op>`` (``att``, ``att_masked_fill``,
``att_softmax``), never a chain of everything done before.  Every value of
``q, k, v = …`` is named after its own target, whether it comes from a
``split``, ``chunk``, ``unbind``, iterating a tensor or a generator; a
library module called inside such a statement keeps its path (``c_attn``).
``nn.MultiheadAttention``'s steps take the names its documentation uses.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import tracer
from tests import capture_corpus as corpus


def _names(run: object) -> list[str]:
    return [n.name for n in tracer.trace_torch(run).nodes]  # type: ignore[arg-type]


def test_a_reassigned_variable_is_named_by_what_each_statement_did_to_it() -> None:
    names = _names(corpus.fused)
    assert {"att", "att_masked_fill", "att_softmax"} <= set(names), names
    assert not any(".masked_fill.softmax" in n for n in names), names
    assert {"k.view.transpose", "q.view.transpose", "y.transpose.view"} <= set(names), names


def test_dropout_of_a_reassigned_variable_is_named_after_it() -> None:
    def run() -> torch.Tensor:
        torch.manual_seed(0)
        drop = nn.Dropout(0.5)
        w = torch.softmax(torch.rand(3, 3), dim=-1)
        w = drop(w)
        w = w * 2.0
        return w

    names = _names(run)
    assert {"w", "w_dropout", "w_mul"} <= set(names), names


def test_the_values_of_one_unpacking_are_named_after_their_targets_however_they_are_made() -> None:
    fused = _names(corpus.fused)  # ``q, k, v = self.c_attn(x).split(…)``
    assert {"c_attn", "q", "k", "v"} <= set(fused) and "q_k_v" not in fused, fused
    gqa = _names(corpus.gqa)  # ``k, v = <tensor>``: iterating a tensor
    assert {"wkv", "k", "v", "k.repeat_interleave", "v.repeat_interleave"} <= set(gqa), gqa
    assert "k_2" not in gqa
    chunked = _names(corpus.einsum)  # ``chunk``, then ``q, k, v = (t.unflatten(…) for t in (q, k, v))``
    assert {"to_qkv", "q.unflatten", "k.unflatten", "v.unflatten", "sim", "sim.einsum"} <= set(chunked), chunked
    assert not any(n.startswith("q_k_v") for n in chunked), chunked


def test_python_3_11_calls_into_python_functions_are_followed_to_their_store() -> None:
    def run() -> torch.Tensor:
        x = torch.rand(2, 4)
        first, second = x.split(2, dim=-1)  # ``Tensor.split`` is a Python function
        sim = torch.einsum("ik,jk->ij", first, second) / math.sqrt(2.0)  # so is ``torch.einsum``
        return F.softmax(sim, dim=-1)

    names = _names(run)
    assert {"first", "second", "sim", "sim.einsum"} <= set(names), names


def test_multihead_attention_steps_have_their_documented_names() -> None:
    names = set(_names(corpus.mha_masks))
    want = {"attn.in_proj", "attn.in_proj_q", "attn.in_proj_k", "attn.in_proj_v", "attn.q", "attn.k", "attn.v"}
    want |= {"attn.q_scaled", "attn.scores", "attn.weights", "attn.context", "attn.out_proj", "attn.weights_mean"}
    assert want <= names, sorted(names)
    assert not any("getitem" in n or "attn_output" in n or n.startswith("attn.proj") for n in names), sorted(names)
    sdpa = set(_names(corpus.block))  # ``need_weights=False``: torch's SDPA inside
    assert {"attn.in_proj", "attn.context", "attn.context.scores", "attn.out_proj"} <= sdpa, sorted(sdpa)


def test_separate_in_projections_are_named_too() -> None:
    def run() -> torch.Tensor:
        torch.manual_seed(0)
        attn = nn.MultiheadAttention(4, 2, kdim=3, vdim=3, batch_first=True)
        x, mem = torch.rand(1, 3, 4), torch.rand(1, 5, 3)
        out, _ = attn(x, mem, mem)
        return out

    names = set(_names(run))
    assert {"attn.in_proj_q", "attn.in_proj_k", "attn.in_proj_v", "attn.scores", "attn.out_proj"} <= names, names


def test_a_tensor_a_factory_makes_is_named_after_the_variable_it_is_stored_in() -> None:
    """``padding = torch.tensor(…)`` is ``padding``, ``x = make()`` over ``return torch.rand(…)`` is ``x``;
    the ``torch.ones`` inside ``mask = torch.tril(torch.ones(…))`` is not ``mask`` (the ``tril`` is)."""

    def make() -> torch.Tensor:
        return torch.rand(1, 4, 3)

    def code() -> torch.Tensor:
        torch.manual_seed(0)
        x = make()
        padding = torch.tensor([[0.0, 0.0, 0.0, -1e9]])
        mask = torch.tril(torch.ones(4, 4))
        scores = (x @ x.transpose(1, 2)).masked_fill(mask == 0, float("-inf")) + padding
        return torch.softmax(scores, dim=-1) @ x

    t = tracer.trace_torch(code)
    leaves = [n.name for n in t.nodes if n.op == "input"]
    assert {"x", "padding", "ones"} <= set(leaves), leaves
    assert "mask" not in leaves and "rand" not in leaves and "tensor" not in leaves, leaves
