# expect: lesson=multihead name=PairedHeads exit=0 heads=even
# One fused qkv viewed as (b, T, 3, heads, d_head); the scores summed over pairs of components, as code that rotates
# pairs lays them out, so each head must be an even number of components wide (a second build must choose such sizes).
import torch
import torch.nn as nn


class PairedHeads(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads, self.d_out = num_heads, d_out
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("hide", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        b, t, _ = x.shape
        qkv = self.qkv(x).view(b, t, 3, self.heads, self.d_out // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        pairs_q = q.unflatten(-1, (-1, 2))  # (b, heads, T, d_head / 2, 2): fails on an odd head width
        pairs_k = k.unflatten(-1, (-1, 2))
        s = torch.einsum("bhipx,bhjpx->bhij", pairs_q, pairs_k) / k.shape[-1] ** 0.5
        w = self.drop(torch.softmax(s.masked_fill(self.hide[:t, :t], float("-inf")), dim=-1))
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, t, self.d_out))
