# expect: lesson=trainable name=SelfAttention exit=1 stage=projections diagnosis=bias_used
# nn.Linear's default bias=True slips in: qkv_bias is accepted but never used.
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out)
        self.W_key = nn.Linear(d_in, d_out)
        self.W_value = nn.Linear(d_in, d_out)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_weights = torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
