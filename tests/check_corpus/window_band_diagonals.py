# expect: lesson=window name=SlidingWindowAttention exit=0
# The band kept is cut from a matrix of ones with two diagonals: tril keeps j <= i, triu(-(w - 1)) keeps
# j >= i - w + 1; everything outside it is masked.
import torch
import torch.nn as nn


class SlidingWindowAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        band = torch.ones(context_length, context_length, dtype=torch.bool).tril().triu(-(window_size - 1))
        self.register_buffer("band", band)

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        scores = scores.masked_fill(~self.band[:t, :t], float("-inf"))
        return scores.softmax(dim=-1) @ v
