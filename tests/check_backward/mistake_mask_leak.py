"""Mistake: the weights of the softmax's backward recomputed without the causal mask."""

import math

import torch


def attention_backward(Q, K, V, dO, causal=True):
    S = Q @ K.T / math.sqrt(Q.shape[-1])
    hidden = torch.triu(torch.ones_like(S, dtype=torch.bool), 1)
    P = torch.softmax(S.masked_fill(hidden, float("-inf")) if causal else S, dim=-1)
    dV = P.T @ dO
    P_again = torch.softmax(S, dim=-1)  # forgot the mask here
    dP = dO @ V.T
    dS = P_again * (dP - (P_again * dP).sum(-1, keepdim=True)) / math.sqrt(Q.shape[-1])
    return dS @ K, dS.T @ Q, dV
