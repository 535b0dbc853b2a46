# expect: lesson=window name=SlidingWindowAttention exit=1 stage=mask diagnosis=window_not_causal
# The window part alone: |i - j| < w is kept, so every query also sees the w - 1 tokens after it.
import torch
import torch.nn as nn


class SlidingWindowAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        pos = torch.arange(context_length)
        self.register_buffer("mask", (pos[:, None] - pos[None, :]).abs() >= window_size)

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
