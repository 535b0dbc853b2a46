# expect: lesson=causal name=Causal exit=1 stage=mask diagnosis=mask_missing
# Builds the mask buffer and never uses it.
import math

import torch
import torch.nn as nn


class Causal(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.wq = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.wk = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.wv = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        T = x.shape[1]
        q = self.wq(x)
        k = self.wk(x)
        v = self.wv(x)
        s = q @ k.transpose(1, 2)
        w = torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1)
        w = self.drop(w)
        return w @ v
