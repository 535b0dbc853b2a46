"""Correct: every gradient entry by entry, with Python loops, as the chain rule is written on the board."""

import math

import torch


def attention_backward(Q, K, V, dO, causal=False):
    T, d = Q.shape
    S = torch.zeros(T, T)
    for i in range(T):
        for j in range(T):
            S[i, j] = (Q[i] * K[j]).sum() / math.sqrt(d)
            if causal and j > i:
                S[i, j] = float("-inf")
    P = torch.softmax(S, dim=1)
    dV = torch.zeros_like(V)
    for j in range(T):
        for i in range(T):
            dV[j] += P[i, j] * dO[i]
    dQ = torch.zeros_like(Q)
    dK = torch.zeros_like(K)
    for i in range(T):
        dP = torch.stack([(dO[i] * V[j]).sum() for j in range(T)])
        row = (P[i] * dP).sum()
        for j in range(T):
            dS = P[i, j] * (dP[j] - row) / math.sqrt(d)
            dQ[i] += dS * K[j]
            dK[j] += dS * Q[i]
    return dQ, dK, dV
