"""A layer with an output projection, checked against a lesson of one head, is judged on its attention.

Published layers (Llama's, Mistral's ``o_proj``, Meta's ``wo``) end with a
projection over their heads; the one-head lessons have none.  Built with one
head, the layer's square projection is set to the identity (its bias to 0)
and the attention before it is compared stage by stage: a correct layer
matches, a mistake before the projection is still named, and a projection of
another shape is refused in one line naming the lessons with heads.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import tracer
from tracer.errors import InputError


class Projected(nn.Module):
    """Causal attention with its heads and an output projection with a bias, in Llama's layout."""

    def __init__(self, hidden_size: int, block_size: int, dropout: float = 0.0, num_heads: int = 1) -> None:
        super().__init__()
        self.h, self.d = num_heads, hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.o_proj = nn.Linear(hidden_size, self.out_width(hidden_size))
        self.drop = nn.Dropout(dropout)
        self.scale = math.sqrt(self.d)

    def out_width(self, hidden_size: int) -> int:
        return hidden_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (p(x).view(b, t, self.h, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = q @ k.transpose(-1, -2)
        s = self.masked(s, t) / self.scale
        z = self.drop(s.softmax(-1)) @ v
        return self.o_proj(z.transpose(1, 2).reshape(b, t, self.h * self.d))

    def masked(self, s: torch.Tensor, t: int) -> torch.Tensor:
        return s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))


class Unmasked(Projected):
    """The same layer with one mistake: no causal mask."""

    def masked(self, s: torch.Tensor, t: int) -> torch.Tensor:
        return s


class Widening(Projected):
    """An output projection twice as wide as the values: no identity maps them."""

    def out_width(self, hidden_size: int) -> int:
        return 2 * hidden_size


def test_a_correct_layer_with_an_output_projection_matches_a_one_head_lesson() -> None:
    r = tracer.check(Projected, lesson="causal")
    assert r.ok, r.explain("en")
    out = [x for x in r.roles if x.role == "W_out"]
    assert [x.param for x in out] == ["o_proj.weight"] and "identity" in r.explain("en")


def test_a_mistake_before_the_projection_is_still_named() -> None:
    r = tracer.check(Unmasked, lesson="causal")
    assert not r.ok and r.diagnosis == "mask_missing"


def test_the_projection_is_still_judged_by_a_lesson_with_heads() -> None:
    r = tracer.check(Projected, lesson="multihead")
    assert r.ok, r.explain("en")
    assert not any("identity" in str(x.how) for x in r.roles)


def test_a_projection_that_no_identity_fits_is_refused_in_one_line() -> None:
    with pytest.raises(InputError) as e:
        tracer.check(Widening, lesson="causal")
    said = str(e.value)
    assert "o_proj.weight" in said and "multihead" in said and "\n" not in said
