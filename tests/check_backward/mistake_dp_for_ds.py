"""Mistake: dQ and dK computed from dP, as if the softmax had no backward."""

import math

import torch


def attention_backward(Q, K, V, dO, causal=False):
    S = Q @ K.T / math.sqrt(K.shape[-1])
    if causal:
        S = S + torch.triu(torch.full_like(S, float("-inf")), 1)
    P = S.softmax(-1)
    dV = P.T @ dO
    dP = dO @ V.T
    if causal:
        dP = dP.tril()
    dS = dP / math.sqrt(K.shape[-1])
    return dS @ K, dS.T @ Q, dV
