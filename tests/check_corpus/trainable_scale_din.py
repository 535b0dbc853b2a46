# expect: lesson=trainable name=SelfAttention_v1 exit=1 stage=scaling diagnosis=scale_wrong
# Scales by the square root of the input size, not of the key size.
import torch
import torch.nn as nn


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_in = d_in
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries, keys, values = x @ self.W_query, x @ self.W_key, x @ self.W_value
        attn_weights = torch.softmax(queries @ keys.T / self.d_in**0.5, dim=-1)
        return attn_weights @ values
