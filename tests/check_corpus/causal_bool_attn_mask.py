# expect: lesson=causal name=CausalAttention exit=0
# The caller hands a boolean attn_mask, True over the places to hide, and the module fills them with -inf.
import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attn_mask):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.einsum("bid,bjd->bij", q, k) / k.shape[-1] ** 0.5
        weights = torch.softmax(scores.masked_fill(attn_mask, -torch.inf), dim=-1)
        return torch.einsum("bij,bjd->bid", self.dropout(weights), v)
