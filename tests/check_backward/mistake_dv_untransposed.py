"""Mistake: an autograd.Function whose backward forgets the transpose in dV = P^T dO."""

import math

import torch


class Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, causal=False):
        S = Q @ K.T / math.sqrt(Q.shape[-1])
        if causal:
            S = S.masked_fill(torch.ones_like(S, dtype=torch.bool).triu(1), float("-inf"))
        P = S.softmax(dim=-1)
        ctx.save_for_backward(Q, K, V, P)
        return P @ V

    @staticmethod
    def backward(ctx, dO):
        Q, K, V, P = ctx.saved_tensors
        dV = P @ dO
        dP = dO @ V.T
        dS = P * (dP - (P * dP).sum(-1, keepdim=True)) / math.sqrt(Q.shape[-1])
        return dS @ K, dS.T @ Q, dV, None


attention_backward = Attention
