"""Attention whose rotary embedding is computed in complex numbers, as Meta's Llama code does it.

The queries and keys are viewed as complex numbers (pairs of neighbours,
``view_as_complex``), multiplied by unit complex numbers ``e^{i·m·θ}``
(``torch.polar``) and viewed back as real pairs (``view_as_real``).  Written
for the capture tests in our own words; two heads, causal, batch of one.
"""

from __future__ import annotations

import torch
from torch import nn

T, D, HEADS = 5, 8, 2


def frequencies(head_dim: int, length: int, base: float = 10000.0) -> torch.Tensor:
    """``e^{i·m·θ_p}`` for every position ``m`` and pair ``p``: one complex number of modulus 1 each."""
    theta = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(length).float(), theta)
    return torch.polar(torch.ones_like(angles), angles)


def rotate(x: torch.Tensor, cis: torch.Tensor) -> torch.Tensor:
    """Turn each neighbour pair of ``x`` (b, t, h, d) by its position's angle."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    turned = pairs * cis.view(1, x.shape[1], 1, -1)
    return torch.view_as_real(turned).flatten(3).type_as(x)


class ComplexRotary(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wq = nn.Linear(D, D, bias=False)
        self.wk = nn.Linear(D, D, bias=False)
        self.wv = nn.Linear(D, D, bias=False)
        self.wo = nn.Linear(D, D, bias=False)
        self.register_buffer("cis", frequencies(D // HEADS, T), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, HEADS, D // HEADS)
        k = self.wk(x).view(b, t, HEADS, D // HEADS)
        v = self.wv(x).view(b, t, HEADS, D // HEADS)
        q, k = rotate(q, self.cis[:t]), rotate(k, self.cis[:t])
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = q @ k.transpose(2, 3) / (D // HEADS) ** 0.5
        mask = torch.full((t, t), float("-inf")).triu(1)
        weights = torch.softmax(scores + mask, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(b, t, D)
        return self.wo(out)


def meta_rope() -> torch.Tensor:
    torch.manual_seed(3)
    model = ComplexRotary()
    return model(torch.randn(1, T, D))
