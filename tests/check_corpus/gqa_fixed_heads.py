# expect: lesson=gqa name=GQA exit=1 stage=structure diagnosis=sizes_ignored
# Heads and groups reshaped with the lesson's numbers typed in (4 query heads, 2 key/value groups, 2 wide),
# so the constructor's num_heads and num_kv_groups only size the weights.
import torch
import torch.nn as nn


class GQA(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups, qkv_bias=False):
        super().__init__()
        kv_width = num_kv_groups * (d_out // num_heads)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, kv_width, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, kv_width, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, 4, -1).transpose(1, 2)
        k = self.W_key(x).view(b, t, 2, -1).transpose(1, 2).repeat_interleave(2, dim=1)
        v = self.W_value(x).view(b, t, 2, -1).transpose(1, 2).repeat_interleave(2, dim=1)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = (q @ k.transpose(-2, -1)).masked_fill(causal, -torch.inf) / q.shape[-1] ** 0.5
        out = torch.softmax(scores, dim=-1) @ v
        return self.out_proj(out.transpose(1, 2).reshape(b, t, -1))
