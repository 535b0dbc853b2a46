"""Mistake: the row sum of the softmax's backward taken down the columns (dim=0)."""

import torch


def attention_backward(Q, K, V, dO, causal=False):
    scale = Q.shape[-1] ** -0.5
    scores = torch.einsum("id,jd->ij", Q, K) * scale
    if causal:
        scores = scores.masked_fill(torch.ones(scores.shape, dtype=torch.bool).triu(1), -torch.inf)
    P = scores.softmax(-1)
    dV = torch.einsum("ij,id->jd", P, dO)
    dP = torch.einsum("id,jd->ij", dO, V)
    dS = P * (dP - (P * dP).sum(dim=0, keepdim=True))
    return torch.einsum("ij,jd->id", dS, K) * scale, torch.einsum("ij,id->jd", dS, Q) * scale, dV
