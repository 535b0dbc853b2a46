"""Correct: einsum for every product, the mask as a boolean matrix."""

import torch


def attention_backward(Q, K, V, dO, causal=False):
    scale = Q.shape[-1] ** -0.5
    scores = torch.einsum("id,jd->ij", Q, K) * scale
    if causal:
        later = torch.ones(scores.shape, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(later, -torch.inf)
    P = scores.softmax(-1)
    dV = torch.einsum("ij,id->jd", P, dO)
    dP = torch.einsum("id,jd->ij", dO, V)
    dS = P * (dP - torch.einsum("ij,ij->i", P, dP)[:, None])
    dQ = torch.einsum("ij,jd->id", dS, K) * scale
    dK = torch.einsum("ij,id->jd", dS, Q) * scale
    return dQ, dK, dV
