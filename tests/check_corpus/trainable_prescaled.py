# expect: lesson=trainable name=Attention exit=0
# Own names, (d_out, d_in) parameters used as x @ W.T, and the queries scaled before the product.
import math

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.wq = nn.Parameter(torch.randn(d_out, d_in) * 0.5)
        self.wk = nn.Parameter(torch.randn(d_out, d_in) * 0.5)
        self.wv = nn.Parameter(torch.randn(d_out, d_in) * 0.5)

    def forward(self, x):
        q = x @ self.wq.T
        k = x @ self.wk.T
        v = x @ self.wv.T
        q = q / math.sqrt(k.shape[-1])
        weights = (q @ k.T).softmax(dim=-1)
        return weights @ v
