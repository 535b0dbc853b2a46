# expect: lesson=kvcache name=ListCacheAttention exit=0
# The cache as two Python lists with one tensor per token; the new tokens go in one at a time, each appended
# before its query reads the stacked lists, so no mask is needed.
import math

import torch
import torch.nn as nn


class ListCacheAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.query = nn.Linear(d_in, d_out, bias=False)
        self.key = nn.Linear(d_in, d_out, bias=False)
        self.value = nn.Linear(d_in, d_out, bias=False)
        self.keys, self.values = [], []

    def reset(self):
        self.keys, self.values = [], []

    def forward(self, x):
        outputs = []
        for t in range(x.shape[1]):
            x_t = x[:, t]  # (b, d_in)
            self.keys.append(self.key(x_t))
            self.values.append(self.value(x_t))
            k = torch.stack(self.keys, dim=1)  # (b, seen, d_out)
            v = torch.stack(self.values, dim=1)
            q = self.query(x_t).unsqueeze(1)  # (b, 1, d_out)
            w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(k.shape[-1]), dim=-1)
            outputs.append(w @ v)
        return torch.cat(outputs, dim=1)
