# expect: lesson=flash name=flash_attention exit=1 stage=context diagnosis=flash_divide_inside
# The accumulator is normalized by the running sum after every block, and once more at the end.
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
        m_new = torch.maximum(m, s.max(dim=1).values)
        p = torch.exp(s - m_new[:, None])
        c = torch.exp(m - m_new)
        ell = ell * c + p.sum(dim=1)
        o = (o * c[:, None] + p @ v[lo:hi]) / ell[:, None]  # divides inside the loop
        m = m_new
    return o / ell[:, None]
