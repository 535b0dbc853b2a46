# expect: lesson=multihead name=MultiHeadedAttention exit=1 stage=mask diagnosis=mask_after_softmax
# Annotated-Transformer style with a keep mask, but the mask zeroes the probabilities after the softmax.
import math

import torch
import torch.nn as nn


def attention(query, key, value, mask, dropout=None):
    "Attention whose masking comes one step too late: the kept weights no longer sum to one."
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    p_attn = scores.softmax(dim=-1)
    p_attn = p_attn.masked_fill(mask == 0, 0.0)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.d_k, self.h = d_out // num_heads, num_heads
        self.w_q = nn.Linear(d_in, d_out, bias=False)
        self.w_k = nn.Linear(d_in, d_out, bias=False)
        self.w_v = nn.Linear(d_in, d_out, bias=False)
        self.w_o = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, mask):
        n = x.size(0)
        q, k, v = (w(x).view(n, -1, self.h, self.d_k).transpose(1, 2) for w in (self.w_q, self.w_k, self.w_v))
        x, _ = attention(q, k, v, mask, self.dropout)
        return self.w_o(x.transpose(1, 2).contiguous().view(n, -1, self.h * self.d_k))
