"""Correct: an autograd.Function in torch's newer form, forward without ctx and setup_context saving the
weights; the row sum of the softmax's backward written as a matrix-vector product."""

import math

import torch


class Attention(torch.autograd.Function):
    @staticmethod
    def forward(q, k, v, causal):
        s = q @ k.mT / math.sqrt(q.size(-1))
        if causal:
            n = s.size(-1)
            s = s.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
        w = torch.softmax(s, dim=-1)
        return w @ v, w

    @staticmethod
    def setup_context(ctx, inputs, output):
        q, k, v, _ = inputs
        ctx.save_for_backward(q, k, v, output[1])

    @staticmethod
    def backward(ctx, grad_out, grad_w):
        q, k, v, w = ctx.saved_tensors
        grad_v = w.mT @ grad_out
        grad_w = grad_out @ v.mT
        row = (w * grad_w) @ torch.ones(w.size(-1), 1)
        grad_s = w * (grad_w - row) / math.sqrt(q.size(-1))
        return grad_s @ k, grad_s.mT @ q, grad_v, None


attention_backward = Attention
