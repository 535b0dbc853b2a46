# expect: lesson=window name=LocalAttention exit=1 stage=structure diagnosis=sizes_ignored
# The window written into forward as the number 3 instead of the constructor's window_size: right for the
# lesson's window of three keys, wrong for any other.
import torch
import torch.nn as nn


class LocalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size, qkv_bias=False):
        super().__init__()
        self.window_size = window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        n = x.shape[1]
        window = 3
        pos = torch.arange(n)
        gap = pos.view(-1, 1) - pos.view(1, -1)
        allowed = (gap >= 0) & (gap < window)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.einsum("bid,bjd->bij", q, k) / k.shape[-1] ** 0.5
        scores = scores.masked_fill(~allowed, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v
