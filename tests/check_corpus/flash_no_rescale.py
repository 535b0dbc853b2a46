# expect: lesson=flash name=flash_attention exit=1 stage=context diagnosis=flash_no_rescale
# The running max is kept, but what was summed before a larger max arrives is never rescaled.
import torch


def flash_attention(q, k, v, block_size, causal=True):
    t, d = q.shape
    m = torch.full((t,), -torch.inf)
    ell = torch.zeros(t)
    o = torch.zeros(t, v.shape[1])
    for lo in range(0, t, block_size):
        hi = min(lo + block_size, t)
        s = q @ k[lo:hi].T / d**0.5
        s = s.masked_fill(torch.arange(lo, hi)[None, :] > torch.arange(t)[:, None], -torch.inf)
        m = torch.maximum(m, s.max(dim=1).values)
        p = torch.exp(s - m[:, None])
        ell = ell + p.sum(dim=1)  # forgot: ell * exp(m_old - m_new)
        o = o + p @ v[lo:hi]  # forgot: o * exp(m_old - m_new)
    return o / ell[:, None]
