# expect: lesson=causal name=CausalAttention exit=1 stage=mask diagnosis=mask_missing
# Takes the caller's mask as a parameter, then forgets to add it: every token sees the future.
import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attn_mask):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(1, 2)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        return self.dropout(weights) @ values
