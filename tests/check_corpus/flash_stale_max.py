# expect: lesson=flash name=flash_attention exit=1 stage=context diagnosis=flash_block_max
# One row at a time; the new max is used in the block but never stored, so m stays -inf and every block
# wipes out what the ones before it added.
import math

import torch


def flash_attention(q, k, v, block_size, causal=True):
    t, d = q.shape
    out = torch.empty(t, v.shape[1])
    for i in range(t):
        m, ell, o = -math.inf, 0.0, torch.zeros(v.shape[1])
        for start in range(0, i + 1, block_size):
            stop = min(start + block_size, i + 1)
            s = k[start:stop] @ q[i] / math.sqrt(d)
            m_new = max(m, s.max().item())
            p = torch.exp(s - m_new)
            c = math.exp(m - m_new)
            ell = ell * c + p.sum()
            o = o * c + p @ v[start:stop]
            # forgot: m = m_new
        out[i] = o / ell
    return out
