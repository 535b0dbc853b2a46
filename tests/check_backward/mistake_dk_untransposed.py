"""Mistake: dK = dS Q instead of dS^T Q."""

import math

import torch


def attention_backward(Q, K, V, dO, causal=False):
    S = Q @ K.T / math.sqrt(Q.shape[1])
    if causal:
        S = S.masked_fill(torch.triu(torch.ones_like(S), 1).bool(), float("-inf"))
    P = torch.softmax(S, dim=1)
    dV = P.T @ dO
    dP = dO @ V.T
    dS = P * (dP - (P * dP).sum(1, keepdim=True)) / math.sqrt(Q.shape[1])
    return dS @ K, dS @ Q, dV
