"""Correct: matrix products, with the dropout mask and rate the forward used passed in."""

import math

import torch


def attention_backward(Q, K, V, dO, causal=True, dropout_mask=None, p=0.0):
    d_k = K.shape[1]
    S = Q @ K.transpose(0, 1) / math.sqrt(d_k)
    if causal:
        S = S + torch.triu(torch.full_like(S, float("-inf")), diagonal=1)
    P = torch.softmax(S, dim=-1)
    if dropout_mask is None:
        dropout_mask = torch.ones_like(P)
    P_drop = P * dropout_mask / (1 - p)
    dV = P_drop.transpose(0, 1) @ dO
    dP_drop = dO @ V.transpose(0, 1)
    dP = dP_drop * dropout_mask / (1 - p)
    dS = P * (dP - (P * dP).sum(dim=-1, keepdim=True))
    dS = dS / math.sqrt(d_k)
    return dS @ K, dS.transpose(0, 1) @ Q, dV
