# expect: lesson=flash name=flash_attention exit=0
# Every query at once, one tile of keys per step, as FlashAttention's kernel does for a block of rows:
# the causal mask is applied inside each tile, the statistics are kept per row.
import torch


def flash_attention(q, k, v, block_size, causal=True):
    t, d = q.shape
    scale = d**-0.5
    rows = torch.arange(t).unsqueeze(1)
    m = torch.full((t, 1), float("-inf"), dtype=q.dtype)
    ell = torch.zeros(t, 1, dtype=q.dtype)
    acc = torch.zeros(t, v.shape[1], dtype=q.dtype)
    for kb, vb, cols in zip(k.split(block_size), v.split(block_size), torch.arange(t).split(block_size), strict=True):
        s = (q @ kb.T) * scale
        if causal:
            s = s.masked_fill(cols.unsqueeze(0) > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=1, keepdim=True))
        p = torch.exp(s - m_new)
        alpha = torch.exp(m - m_new)
        ell = alpha * ell + p.sum(dim=1, keepdim=True)
        acc = alpha * acc + p @ vb
        m = m_new
    return acc / ell
