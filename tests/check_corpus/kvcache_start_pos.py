# expect: lesson=kvcache name=Attention exit=0
# Meta's Llama style: cache tensors of (batch, context_length, d) preallocated at build time, filled at
# start_pos, which the caller passes; the mask only for a call of several tokens, padded on the left with
# zeros over the cached keys.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d_in, d_out, context_length, max_batch_size=4):
        super().__init__()
        self.wq = nn.Linear(d_in, d_out, bias=False)
        self.wk = nn.Linear(d_in, d_out, bias=False)
        self.wv = nn.Linear(d_in, d_out, bias=False)
        self.cache_k = torch.zeros(max_batch_size, context_length, d_out)
        self.cache_v = torch.zeros(max_batch_size, context_length, d_out)

    def forward(self, x, start_pos):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv
        keys = self.cache_k[:bsz, : start_pos + seqlen]
        values = self.cache_v[:bsz, : start_pos + seqlen]
        scores = torch.matmul(xq, keys.transpose(1, 2)) / math.sqrt(xq.shape[-1])
        if seqlen > 1:
            mask = torch.triu(torch.full((seqlen, seqlen), float("-inf")), diagonal=1)
            mask = torch.hstack([torch.zeros((seqlen, start_pos)), mask])
            scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        return torch.matmul(scores, values)
