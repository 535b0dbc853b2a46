# expect: lesson=flash name=flash_attention exit=0
# The forward pass as a kernel writes it for the backward pass: it returns the output and each row's
# log-sum-exp L = m + log(l), as FlashAttention-2 does.
import torch


def flash_attention(q, k, v, block_size):
    t, d = q.shape
    m = torch.full((t,), float("-inf"))
    ell = torch.zeros(t)
    o = torch.zeros(t, v.shape[1])
    rows = torch.arange(t)[:, None]
    for lo in range(0, t, block_size):
        cols = torch.arange(lo, min(lo + block_size, t))
        s = (q @ k[cols].T) / d**0.5
        s = s.masked_fill(cols[None, :] > rows, float("-inf"))
        m_new = torch.maximum(m, s.max(1).values)
        p = torch.exp(s - m_new[:, None])
        a = torch.exp(m - m_new)
        ell = a * ell + p.sum(1)
        o = a[:, None] * o + p @ v[cols]
        m = m_new
    return o / ell[:, None], m + torch.log(ell)
