# expect: lesson=rope name=Attention exit=0 style=interleaved
# Meta's Llama layer signature: forward(x, start_pos, freqs_cis, mask), the caller owning the tables and the mask.
import math

import torch
import torch.nn as nn


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(-2)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(-2)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Attention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.wq = nn.Linear(d_in, d_out, bias=False)
        self.wk = nn.Linear(d_in, d_out, bias=False)
        self.wv = nn.Linear(d_in, d_out, bias=False)
        self.head_dim = d_out

    def forward(self, x, start_pos, freqs_cis, mask):
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        scores = torch.matmul(xq, xk.transpose(1, 2)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        scores = torch.softmax(scores.float(), dim=-1).type_as(xq)
        return torch.matmul(scores, xv)
