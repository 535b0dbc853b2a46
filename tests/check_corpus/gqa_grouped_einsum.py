# expect: lesson=gqa name=GQA exit=0
# No repeated keys at all: the query heads are viewed as (groups, heads per group) and each group's keys
# and values are broadcast over its heads inside einsum; nn.Parameter weights, scaling folded into the queries.
import torch
import torch.nn as nn


class GQA(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups, qkv_bias=False):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_groups, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.d, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.d, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        r = self.h // self.g
        q = self.W_query(x).view(b, t, self.g, r, self.d).permute(0, 2, 3, 1, 4)  # (b, g, r, t, d)
        k = self.W_key(x).view(b, t, self.g, self.d).transpose(1, 2)  # (b, g, t, d)
        v = self.W_value(x).view(b, t, self.g, self.d).transpose(1, 2)
        scores = torch.einsum("bgrid,bgjd->bgrij", q, k).reshape(b, self.h, t, t)
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")) / self.d**0.5, dim=-1)
        z = torch.einsum("bgrij,bgjd->bgrid", weights.view(b, self.g, r, t, t), v).reshape(b, self.h, t, self.d)
        return self.out_proj(z.transpose(1, 2).reshape(b, t, self.h * self.d))
