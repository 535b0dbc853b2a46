"""Correct: a torch.autograd.Function that saves the weights in forward and uses them in backward."""

import math

import torch


class SoftmaxAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, causal=False):
        S = Q @ K.T / math.sqrt(Q.shape[-1])
        if causal:
            T = S.shape[0]
            S = S.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        P = S.softmax(dim=-1)
        ctx.save_for_backward(Q, K, V, P)
        return P @ V

    @staticmethod
    def backward(ctx, dO):
        Q, K, V, P = ctx.saved_tensors
        dV = P.T @ dO
        dP = dO @ V.T
        dS = P * (dP - (P * dP).sum(-1, keepdim=True))
        dS = dS / math.sqrt(Q.shape[-1])
        return dS @ K, dS.T @ Q, dV, None


attention_backward = SoftmaxAttention
