# expect: lesson=kvcache name=CachedAttention exit=1 stage=generation diagnosis=kv_attend_before_append
# The cache passed in and returned, but the new tokens attend to the cache before their keys are appended.
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
        if cache is None:  # the prompt: ordinary causal attention
            n = x_new.shape[1]
            scores = (q @ k.transpose(1, 2)).masked_fill(self.mask[:n, :n], -torch.inf)
            weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
            return weights @ v, (k, v)
        old_k, old_v = cache
        weights = torch.softmax(q @ old_k.transpose(1, 2) / k.shape[-1] ** 0.5, dim=-1)  # the old cache only
        context = weights @ old_v
        return context, (torch.cat((old_k, k), dim=1), torch.cat((old_v, v), dim=1))
