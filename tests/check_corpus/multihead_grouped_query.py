# expect: lesson=multihead name=MultiHeadAttention exit=1 stage=structure diagnosis=grouped_query
# Grouped-query attention: one key/value head shared by every query head.
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.h, self.kvh, self.dh = num_heads, 1, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, self.dh, bias=False)
        self.W_value = nn.Linear(d_in, self.dh, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.h, self.dh).transpose(1, 2)
        k = self.W_key(x).view(b, n, 1, self.dh).transpose(1, 2)
        v = self.W_value(x).view(b, n, 1, self.dh).transpose(1, 2)
        w = torch.softmax(q @ k.transpose(2, 3) / self.dh**0.5, dim=-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, n, -1))
