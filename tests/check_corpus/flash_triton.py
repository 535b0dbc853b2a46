# expect: lesson=flash name=flash_attention exit=0
# The Triton tutorial's loop written in torch: blocks of queries, and inside each the key blocks up to the
# diagonal with m_i, l_i and acc, the exponentials taken in base 2 (exp2 with the scale times log2 e).
import math

import torch


def flash_attention(q, k, v, block_size):
    t, d = q.shape
    qk_scale = (1.0 / math.sqrt(d)) * 1.44269504  # 1 / ln 2: exp(x) = exp2(x * log2 e)
    out = torch.empty(t, v.shape[1], dtype=q.dtype)
    for start_m in range(0, t, block_size):
        offs_m = torch.arange(start_m, min(start_m + block_size, t))
        q_blk = q[offs_m]
        m_i = torch.full((len(offs_m),), float("-inf"), dtype=q.dtype)
        l_i = torch.zeros(len(offs_m), dtype=q.dtype)
        acc = torch.zeros(len(offs_m), v.shape[1], dtype=q.dtype)
        hi = min(start_m + block_size, t)  # causal: no key block after the query block
        for start_n in range(0, hi, block_size):
            offs_n = torch.arange(start_n, min(start_n + block_size, hi))
            qk = (q_blk @ k[offs_n].T) * qk_scale
            qk = torch.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
            m_ij = torch.maximum(m_i, qk.max(dim=1).values)
            p = torch.exp2(qk - m_ij[:, None])
            alpha = torch.exp2(m_i - m_ij)
            l_i = l_i * alpha + p.sum(dim=1)
            acc = acc * alpha[:, None] + p @ v[offs_n]
            m_i = m_ij
        out[offs_m] = acc / l_i[:, None]
    return out
