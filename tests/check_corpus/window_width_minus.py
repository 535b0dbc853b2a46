# expect: lesson=window name=Window exit=1 stage=mask diagnosis=window_width_off
# Off by one the other way: the band is tested as 0 <= i - j < w - 1, so each query sees only w - 1 keys.
import torch
import torch.nn as nn


class Window(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.w = window_size

    def forward(self, x):
        t = x.shape[1]
        i = torch.arange(t).unsqueeze(1)
        j = torch.arange(t).unsqueeze(0)
        hidden = (j > i) | (i - j >= self.w - 1)
        scores = self.W_query(x) @ self.W_key(x).transpose(1, 2)
        scores = scores.masked_fill(hidden, float("-inf"))
        weights = torch.softmax(scores / self.W_key.out_features**0.5, dim=-1)
        return weights @ self.W_value(x)
