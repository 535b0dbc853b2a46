"""An autograd.Function whose backward raises (a shape error of its own making)."""

import torch


class Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, causal=False):
        P = (Q @ K.T / Q.shape[-1] ** 0.5).softmax(-1)
        ctx.save_for_backward(Q, K, V, P)
        return P @ V

    @staticmethod
    def backward(ctx, dO):
        Q, K, V, P = ctx.saved_tensors
        dV = P.T @ dO
        dP = dO @ V
        return dP @ K, dP.T @ Q, dV, None


attention_backward = Attention
