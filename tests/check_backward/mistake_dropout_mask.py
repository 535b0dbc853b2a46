"""Mistake: the backward through dropout rescales dP but forgets the mask."""

import math

import torch


def attention_backward(Q, K, V, dO, causal=True, dropout_mask=None, p=0.0):
    S = Q @ K.T / math.sqrt(K.shape[1])
    if causal:
        S = S + torch.triu(torch.full_like(S, float("-inf")), diagonal=1)
    P = torch.softmax(S, dim=-1)
    dV = (P * dropout_mask / (1 - p)).T @ dO
    dP = (dO @ V.T) / (1 - p)
    dS = P * (dP - (P * dP).sum(dim=-1, keepdim=True)) / math.sqrt(K.shape[1])
    return dS @ K, dS.T @ Q, dV
