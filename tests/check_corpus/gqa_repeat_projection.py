# expect: lesson=gqa name=SharedKV exit=1 stage=heads diagnosis=gqa_repeat
# The projected keys and values tiled before the head split (repeat along the last axis): the same
# wrong pairing as repeat on the head axis, group (h - 1) mod G + 1 for head h.
import torch
import torch.nn as nn


class SharedKV(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups, qkv_bias=False):
        super().__init__()
        self.heads, self.head_dim = num_heads, d_out // num_heads
        self.r = num_heads // num_kv_groups
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        shape = (b, t, self.heads, self.head_dim)
        q = self.W_query(x).view(shape).transpose(1, 2)
        k = self.W_key(x).repeat(1, 1, self.r).view(shape).transpose(1, 2)
        v = self.W_value(x).repeat(1, 1, self.r).view(shape).transpose(1, 2)
        mask = torch.triu(torch.ones(t, t), diagonal=1).bool()
        s = (q @ k.transpose(-2, -1)).masked_fill(mask, float("-inf"))
        w = torch.softmax(s / self.head_dim**0.5, dim=-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, t, -1))
