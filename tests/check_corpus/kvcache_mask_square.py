# expect: lesson=kvcache name=CachedAttention exit=1 stage=generation diagnosis=kv_mask_square
# The cache passed in and returned, but the mask is sliced for the new tokens alone (mask[:n, :n]), as for a whole text.
import torch
import torch.nn as nn


class CachedAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.q = nn.Linear(d_in, d_out, bias=False)
        self.k = nn.Linear(d_in, d_out, bias=False)
        self.v = nn.Linear(d_in, d_out, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())

    def forward(self, x_new, cache=None):
        q, k, v = self.q(x_new), self.k(x_new), self.v(x_new)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=1)
            v = torch.cat((cache[1], v), dim=1)
        n = x_new.shape[1]
        scores = (q @ k.transpose(1, 2)).masked_fill(self.mask[:n, :n], -torch.inf)
        return torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1) @ v, (k, v)
