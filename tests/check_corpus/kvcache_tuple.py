# expect: lesson=kvcache name=CachedAttention exit=0
# The cache passed in and returned as a tuple (keys, values); the mask built from positions; an einsum.
import torch
import torch.nn as nn


class CachedAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.q = nn.Linear(d_in, d_out, bias=False)
        self.k = nn.Linear(d_in, d_out, bias=False)
        self.v = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x_new, cache=None):
        k, v = self.k(x_new), self.v(x_new)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=1)
            v = torch.cat((cache[1], v), dim=1)
        q = self.q(x_new)
        start = k.shape[1] - x_new.shape[1]  # the new tokens' first position
        rows = torch.arange(start, k.shape[1]).unsqueeze(1)
        cols = torch.arange(k.shape[1]).unsqueeze(0)
        scores = torch.einsum("bic,bjc->bij", q, k) / k.shape[-1] ** 0.5
        scores = scores.masked_fill(cols > rows, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v, (k, v)
