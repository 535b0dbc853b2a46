# expect: lesson=flash name=flash_attention exit=0
# One query at a time, as the FlashAttention paper's pseudo-code reads for a single row: a loop over the key
# blocks up to the query, a running max, a running sum and an accumulator, one division at the end.
import math

import torch


def flash_attention(q, k, v, block_size, causal=True):
    t, d = q.shape
    out = torch.empty(t, v.shape[1], dtype=q.dtype)
    for i in range(t):
        m = -math.inf
        ell = torch.zeros((), dtype=q.dtype)
        o = torch.zeros(v.shape[1], dtype=q.dtype)
        last = i + 1 if causal else t  # keys after query i are never visited
        for start in range(0, last, block_size):
            stop = min(start + block_size, last)
            s = k[start:stop] @ q[i] / math.sqrt(d)
            m_new = max(m, s.max().item())
            p = torch.exp(s - m_new)
            c = math.exp(m - m_new)
            ell = ell * c + p.sum()
            o = o * c + p @ v[start:stop]
            m = m_new
        out[i] = o / ell
    return out
