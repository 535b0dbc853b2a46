"""Correct: an autograd.Function in FlashAttention-2's manner: forward saves the output and each row's
log-sum-exp, backward recomputes the weights from them and uses D = rowsum(dO * O) for the row sum."""

import torch


class FlashLike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, is_causal=False):
        s = (q @ k.T) * q.shape[-1] ** -0.5
        if is_causal:
            s = torch.where(torch.ones_like(s, dtype=torch.bool).tril(), s, float("-inf"))
        lse = torch.logsumexp(s, dim=-1, keepdim=True)
        o = torch.exp(s - lse) @ v
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.is_causal = is_causal
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        scale = q.shape[-1] ** -0.5
        s = (q @ k.T) * scale
        if ctx.is_causal:
            s = torch.where(torch.ones_like(s, dtype=torch.bool).tril(), s, float("-inf"))
        p = torch.exp(s - lse)
        dv = p.T @ do
        dp = do @ v.T
        D = (do * o).sum(dim=-1, keepdim=True)
        ds = p * (dp - D) * scale
        return ds @ k, ds.T @ q, dv, None


attention_backward = FlashLike
