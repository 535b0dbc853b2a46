"""Mistake: an autograd.Function that saves queries and keys already scaled, then divides by sqrt(d_k) again."""

import math

import torch


class ScaledAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, causal=False):
        root = math.sqrt(Q.shape[-1])
        Qs, Ks = Q / math.sqrt(root), K / math.sqrt(root)
        S = Qs @ Ks.T
        if causal:
            S = S.masked_fill(torch.ones_like(S, dtype=torch.bool).triu(1), float("-inf"))
        P = S.softmax(dim=-1)
        ctx.save_for_backward(Qs, Ks, V, P)
        return P @ V

    @staticmethod
    def backward(ctx, dO):
        Qs, Ks, V, P = ctx.saved_tensors
        root = math.sqrt(Qs.shape[-1])
        dP = dO @ V.T
        dS = P * (dP - (P * dP).sum(-1, keepdim=True)) / root
        return dS @ Ks / math.sqrt(root), dS.T @ Qs / math.sqrt(root), P.T @ dO, None


attention_backward = ScaledAttention
