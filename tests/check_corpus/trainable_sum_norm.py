# expect: lesson=trainable name=SA exit=1 stage=weights diagnosis=sum_normalised
# Normalises the scaled scores by their sum (the chapter's first attempt) instead of a softmax.
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
        w = (scores / k.shape[-1] ** 0.5) / (scores / k.shape[-1] ** 0.5).sum(dim=-1, keepdim=True)
        return w @ v
