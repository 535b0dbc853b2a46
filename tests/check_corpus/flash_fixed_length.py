# expect: lesson=flash name=flash_attention exit=1 stage=structure diagnosis=sizes_ignored
# The causal mask made once for six tokens and cut per block: the lesson's sequence and the shorter one fit
# in it, a longer sequence runs past its last row.
import math

import torch

CAUSAL = torch.ones(6, 6, dtype=torch.bool).tril()


def flash_attention(q, k, v, block_size, causal=True):
    n, d = q.shape
    row_max = torch.full((n,), -math.inf, dtype=q.dtype)
    row_sum = torch.zeros(n, dtype=q.dtype)
    acc = torch.zeros(n, v.shape[1], dtype=q.dtype)
    for start in range(0, n, block_size):
        stop = min(start + block_size, n)
        s = q @ k[start:stop].T / math.sqrt(d)
        if causal:
            s = s.masked_fill(~CAUSAL[:n, start:stop], -math.inf)
        new_max = torch.maximum(row_max, s.max(dim=1).values)
        p = torch.exp(s - new_max[:, None])
        fix = torch.exp(row_max - new_max)
        row_sum = row_sum * fix + p.sum(dim=1)
        acc = acc * fix[:, None] + p @ v[start:stop]
        row_max = new_max
    return acc / row_sum[:, None]
