# expect: lesson=causal name=Causal exit=1 stage=context diagnosis=dropout_in_eval
# F.dropout(..., training=True): dropout keeps running after model.eval().
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


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
        s = s.masked_fill(self.mask.bool()[:T, :T], -torch.inf)
        w = torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1)
        w = F.dropout(w, p=0.5, training=True)
        return w @ v
