# expect: lesson=causal name=CausalEinsum exit=0
# einsum everywhere, a tril mask built in forward, the scores scaled before the mask.
import torch
import torch.nn as nn


class CausalEinsum(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        q = torch.einsum("btd,de->bte", x, self.W_query)
        k = torch.einsum("btd,de->bte", x, self.W_key)
        v = torch.einsum("btd,de->bte", x, self.W_value)
        scores = torch.einsum("bqe,bke->bqk", q, k) / k.shape[-1] ** 0.5
        t = x.shape[1]
        keep = torch.tril(torch.ones(t, t, dtype=torch.bool))
        scores = scores.masked_fill(~keep, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return torch.einsum("bqk,bke->bqe", weights, v)
