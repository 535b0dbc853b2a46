# expect: lesson=trainable name=SA exit=1 stage=scaling diagnosis=scale_inverted
# Multiplies the scores by sqrt(d_k) instead of dividing.
import torch
import torch.nn as nn


class SA(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_q = nn.Parameter(torch.rand(d_in, d_out))
        self.W_k = nn.Parameter(torch.rand(d_in, d_out))
        self.W_v = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x @ self.W_q
        k = x @ self.W_k
        v = x @ self.W_v
        scores = q @ k.T
        w = torch.softmax(scores * k.shape[-1] ** 0.5, dim=-1)
        return w @ v
