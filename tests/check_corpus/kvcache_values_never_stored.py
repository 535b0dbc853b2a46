# expect: lesson=kvcache name=PreallocatedCache exit=1 stage=generation diagnosis=kv_values_never_stored
# A preallocated cache read for every call; each call writes its keys into their slots, but the value
# buffer is attended to as it was allocated: the line writing the values was never there.
import torch
from torch import nn


class PreallocatedCache(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.register_buffer("keys", torch.zeros(2, context_length, d_out), persistent=False)
        self.register_buffer("values", torch.zeros(2, context_length, d_out), persistent=False)
        self.filled = 0

    def reset_cache(self):
        self.keys.zero_()
        self.values.zero_()
        self.filled = 0

    def forward(self, x):
        n = x.shape[1]
        start, end = self.filled, self.filled + n
        self.keys[:, start:end] = self.W_key(x)
        self.filled = end
        q = self.W_query(x)
        scores = q @ self.keys[:, :end].transpose(1, 2) / self.keys.shape[-1] ** 0.5
        later = torch.arange(end)[None, :] > torch.arange(start, end)[:, None]
        weights = torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1)
        return weights @ self.values[:, :end]
