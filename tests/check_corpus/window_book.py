# expect: lesson=window name=SlidingWindowAttention exit=0
# The book's CausalAttention with a second buffer: the keys w or more places back are hidden too.
import torch
import torch.nn as nn


class SlidingWindowAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        ones = torch.ones(context_length, context_length)
        future = torch.triu(ones, diagonal=1)
        far = torch.tril(ones, diagonal=-window_size)
        self.register_buffer("mask", future + far)

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
