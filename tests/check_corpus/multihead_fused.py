# expect: lesson=multihead name=FusedMHA exit=0
# One fused qkv projection cut in three, heads via reshape/permute, einsum for the scores.
import torch
import torch.nn as nn


class FusedMHA(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.proj = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.reshape(b, t, self.h, -1).permute(0, 2, 1, 3) for z in (q, k, v))
        s = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
        s = s.masked_fill(torch.ones(t, t).triu(1).bool(), float("-inf"))
        w = self.drop(s.softmax(-1))
        out = (w @ v).permute(0, 2, 1, 3).reshape(b, t, -1)
        return self.proj(out)
