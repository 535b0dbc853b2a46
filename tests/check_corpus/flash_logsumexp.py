# expect: lesson=flash name=flash_attention exit=0
# Each key block's softmax finished on its own and kept with its log-sum-exp; blocks are merged by weighting
# each partial output with exp(lse_block - lse_total), the total grown with torch.logaddexp.
import torch


def flash_attention(q, k, v, block_size):
    t, d = q.shape
    rows = torch.arange(t)[:, None]
    lse = torch.full((t,), float("-inf"), dtype=q.dtype)
    out = torch.zeros(t, v.shape[1], dtype=q.dtype)
    for lo in range(0, t, block_size):
        cols = torch.arange(lo, min(lo + block_size, t))
        s = (q @ k[cols].T) / d**0.5
        s = s.masked_fill(cols[None, :] > rows, float("-inf"))
        lse_b = torch.logsumexp(s, dim=-1)
        p = torch.where(torch.isneginf(s), 0.0, torch.exp(s - lse_b[:, None]))  # rows with no key here: 0
        out_b = p @ v[cols]
        lse_new = torch.logaddexp(lse, lse_b)
        old = torch.where(torch.isneginf(lse), 0.0, torch.exp(lse - lse_new))
        new = torch.where(torch.isneginf(lse_b), 0.0, torch.exp(lse_b - lse_new))
        out = out * old[:, None] + out_b * new[:, None]
        lse = lse_new
    return out
