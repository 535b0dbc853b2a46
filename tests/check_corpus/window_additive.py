# expect: lesson=window name=SlidingWindowAttention exit=0
# An additive float mask (0 where a key is seen, -inf elsewhere) built from positions on each call and added
# to the scores before the softmax, as Mistral-style code does.
import math

import torch
import torch.nn as nn


class SlidingWindowAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size):
        super().__init__()
        self.to_q = nn.Linear(d_in, d_out, bias=False)
        self.to_k = nn.Linear(d_in, d_out, bias=False)
        self.to_v = nn.Linear(d_in, d_out, bias=False)
        self.window_size = window_size

    def sliding_mask(self, t):
        i = torch.arange(t).view(-1, 1)
        j = torch.arange(t).view(1, -1)
        mask = torch.zeros(t, t)
        return mask.masked_fill((j > i) | (j <= i - self.window_size), -math.inf)

    def forward(self, x):
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.size(-1))
        weights = torch.softmax(scores + self.sliding_mask(x.size(1)), dim=-1)
        return torch.bmm(weights, v)
