# expect: lesson=window name=SlidingWindowAttention exit=0
# The causal part comes from the caller as an additive mask; the module adds its own band on top.
import torch
import torch.nn as nn


class SlidingWindowAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size):
        super().__init__()
        self.window = window_size
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x, causal_mask):
        t = x.shape[-2]
        i = torch.arange(t)
        too_far = (i[:, None] - i[None, :]) >= self.window
        scores = self.W_query(x) @ self.W_key(x).transpose(-2, -1) + causal_mask
        scores = scores.masked_fill(too_far, float("-inf"))
        weights = torch.softmax(scores / self.W_key.out_features**0.5, dim=-1)
        return weights @ self.W_value(x)
