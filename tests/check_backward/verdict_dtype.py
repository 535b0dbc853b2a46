"""Computes in float64 and returns float64 gradients for float32 inputs."""

import math

import torch


def attention_backward(Q, K, V, dO, causal=False):
    Q, K, V, dO = (t.double() for t in (Q, K, V, dO))
    S = Q @ K.T / math.sqrt(Q.shape[1])
    if causal:
        S = S.masked_fill(torch.triu(torch.ones_like(S), 1).bool(), float("-inf"))
    P = torch.softmax(S, dim=1)
    dP = dO @ V.T
    dS = P * (dP - (P * dP).sum(1, keepdim=True)) / math.sqrt(Q.shape[1])
    return dS @ K, dS.T @ Q, P.T @ dO
