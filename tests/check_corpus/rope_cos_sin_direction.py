# expect: lesson=rope name=RoPEAttention exit=1 stage=rope diagnosis=rope_direction
# Given cos and sin by the caller, but rotate_half negates the wrong half: each pair turns backwards.
import torch
import torch.nn as nn


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((x[..., half:], -x[..., :half]), dim=-1)


class RoPEAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x, cos, sin):
        t = x.shape[1]
        queries, keys = self.W_query(x), self.W_key(x)
        queries = queries * cos + rotate_half(queries) * sin
        keys = keys * cos + rotate_half(keys) * sin
        scores = (queries @ keys.transpose(1, 2)).masked_fill(self.mask.bool()[:t, :t], -torch.inf)
        return torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ self.W_value(x)
