# expect: lesson=trainable name=SelfAttention exit=1 stage=scaling diagnosis=scale_missing
# Forgets the 1/sqrt(d_k).
import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_weights = torch.softmax(queries @ keys.T, dim=-1)
        return attn_weights @ values
