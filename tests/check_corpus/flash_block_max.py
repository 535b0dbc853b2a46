# expect: lesson=flash name=flash_attention exit=1 stage=context diagnosis=flash_block_max
# Each block's exponentials are taken against that block's own max, while the rescale uses the running max.
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
        top = s.max(dim=1).values
        m_new = torch.maximum(m, top)
        p = torch.exp(s - torch.where(torch.isinf(top), 0.0, top)[:, None])  # should be m_new
        c = torch.exp(m - m_new)
        ell = ell * c + p.sum(dim=1)
        o = o * c[:, None] + p @ v[lo:hi]
        m = m_new
    return o / ell[:, None]
