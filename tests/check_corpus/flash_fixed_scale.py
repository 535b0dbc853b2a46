# expect: lesson=flash name=flash_attention exit=1 stage=structure diagnosis=sizes_ignored
# The scores divided by sqrt(2), the lesson's head width, written as a number instead of read from q.
import torch


def flash_attention(q, k, v, block_size, causal=True):
    t = q.shape[0]
    scale = 2**-0.5
    m = torch.full((t, 1), -torch.inf)
    s_sum = torch.zeros(t, 1)
    o = torch.zeros(t, v.shape[-1])
    qpos = torch.arange(t)[:, None]
    for j in range(0, t, block_size):
        kj, vj = k[j : j + block_size], v[j : j + block_size]
        s = scale * q @ kj.T
        if causal:
            s[torch.arange(j, j + kj.shape[0])[None, :] > qpos] = -torch.inf
        m_next = torch.maximum(m, s.amax(-1, keepdim=True))
        scale_old = torch.exp(m - m_next)
        p = torch.exp(s - m_next)
        s_sum = scale_old * s_sum + p.sum(-1, keepdim=True)
        o = scale_old * o + p @ vj
        m = m_next
    return o / s_sum
