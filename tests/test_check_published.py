"""Published multi-head classes are checked as their own callers use them.

Three rules, each tested on small modules written here: a tensor with the
batch and the heads merged into one axis is a layout (``nn.MultiheadAttention``
asked for its weights, d2l's ``transpose_qkv``); the biases of a class that
cannot be asked to drop them are part of its weights; and a mask, or the
keys' and values' tokens, that a layer leaves to its caller are passed as
a caller passes them (the Annotated Transformer's ``forward(query, key,
value, mask=None)`` with a ``(1, T, T)`` keep mask).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn

import tracer
from tracer.compare.check import align, build, forwardargs
from tracer.compare.check.model import Seen
from tracer.compare.check.run import spec_for

AXES = ("h", "b", "i", "c")


def test_a_merged_batch_and_heads_axis_is_read_back_in_either_order() -> None:
    rng = np.random.default_rng(5)
    ref = rng.normal(size=(3, 2, 4, 5))  # heads, batch, tokens, width
    batch_major = ref.transpose(1, 0, 2, 3).reshape(6, 4, 5)  # entry n·heads + m, as torch merges them
    heads_major = ref.reshape(6, 4, 5)
    for merged in (batch_major, heads_major):
        m = align.find(ref, AXES, [Seen("t", "op", merged)])
        assert m is not None and m.split and np.allclose(m.view(), ref)
    shuffled = rng.permutation(batch_major.reshape(6, -1)).reshape(6, 4, 5)
    assert align.find(ref, AXES, [Seen("t", "op", shuffled)]) is None


def test_a_tensor_in_the_references_own_axes_is_preferred_to_a_merged_one() -> None:
    ref = np.arange(2 * 2 * 3 * 2, dtype=float).reshape(2, 2, 3, 2)
    merged = Seen("merged", "op", ref.transpose(1, 0, 2, 3).reshape(4, 3, 2))
    plain = Seen("plain", "op", ref.copy())
    found = align.find(ref, AXES, [merged, plain])
    assert found is not None and found.seen.id == "plain" and not found.split


class Merged(nn.Module):
    """Causal multi-head attention computed on (batch·heads, T, d_head), projections with their biases."""

    def __init__(self, h: int, d_model: int) -> None:
        super().__init__()
        self.h = h
        self.q, self.k, self.v, self.o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape

        def heads(a: torch.Tensor) -> torch.Tensor:
            return a.view(b, t, self.h, d // self.h).transpose(1, 2).reshape(b * self.h, t, d // self.h)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d // self.h)
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        z = torch.bmm(s.softmax(-1), v).view(b, self.h, t, d // self.h).transpose(1, 2).reshape(b, t, d)
        return self.o(z)


class Asked(Merged):
    """The same, with a ``qkv_bias`` it ignores: its biases are then the mistake ``bias_used``."""

    def __init__(self, h: int, d_model: int, qkv_bias: bool = False) -> None:
        super().__init__(h, d_model)


def test_biases_of_a_class_that_takes_no_qkv_bias_are_its_own() -> None:
    assert build.own_bias(Merged) and not build.own_bias(Asked)
    own = tracer.check(Merged, lesson="multihead")
    assert own.ok, own.explain("en")
    asked = tracer.check(Asked, lesson="multihead")
    assert not asked.ok and asked.diagnosis == "bias_used"


class Torch(nn.Module):
    """``nn.MultiheadAttention`` with its default in_proj_bias, given values so that it shows."""

    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        with torch.no_grad():
            self.mha.in_proj_bias.uniform_(-1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        hide = torch.ones(t, t, dtype=torch.bool).triu(1)
        return self.mha(x, x, x, attn_mask=hide)[0]  # need_weights left True: torch's merged path


def test_nn_multihead_attention_with_its_biases_and_weights_matches() -> None:
    got = tracer.check(Torch, lesson="multihead")
    assert got.ok, got.explain("en")
    assert {r.role: r.param for r in got.roles}["b_query"] == "mha.in_proj_bias[0:8]"


def keep_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask == 0, -1e9)
    return s.softmax(-1) @ v


class LeftToCaller(nn.Module):
    """A layer for self- and cross-attention that widens a (batch or 1, T, T) keep mask with unsqueeze(1)."""

    def __init__(self, h: int, d_model: int) -> None:
        super().__init__()
        self.h = h
        self.lin = nn.ModuleList(nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def forward(
        self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        b, t, d = query.shape
        if mask is not None:
            mask = mask.unsqueeze(1)
        pairs = zip(self.lin, (query, key, value), strict=False)
        q, k, v = (lin(a).view(b, -1, self.h, d // self.h).transpose(1, 2) for lin, a in pairs)
        z = keep_attention(q, k, v, mask)
        return self.lin[3](z.transpose(1, 2).reshape(b, t, d))


def test_a_mask_and_tokens_left_to_the_caller_are_passed_as_callers_pass_them() -> None:
    got = tracer.check(LeftToCaller, lesson="multihead")
    assert got.ok, got.explain("en")
    doc = got.to_json()
    assert doc["given"] == {"key": "tokens", "value": "tokens", "mask": "mask_keep"}
    assert "given_tokens" in doc["notes"] and "given_mask_keep" in doc["notes"]


def test_a_layer_that_masks_by_itself_keeps_its_mask_default() -> None:
    class Own(LeftToCaller):
        def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:  # type: ignore[override]
            t = x.shape[1]
            return super().forward(x, x, x, torch.ones(1, t, t).tril() if mask is None else mask)

    got = tracer.check(Own, lesson="multihead")
    assert got.ok and not got.to_json()["given"]


def test_the_mask_shapes_a_caller_may_give() -> None:
    spec = spec_for("multihead")
    x = torch.zeros(2, 5, 8)
    shapes = [forwardargs.value("mask_keep", x, spec, 0, rank).shape for rank in (0, *forwardargs.RANKS)]
    assert shapes == [(1, 1, 5, 5), (5, 5), (1, 5, 5), (1, 1, 5, 5)]
