# expect: lesson=window name=LocalAttention exit=0
# Own names, one fused projection cut in three, the band built from positions each call, and PyTorch's
# fused attention: attn_mask is True where a query may look (i - w < j <= i).
import torch
import torch.nn as nn
import torch.nn.functional as F


class LocalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size, qkv_bias=False):
        super().__init__()
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.window_size = window_size

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        pos = torch.arange(x.shape[1])
        offset = pos[:, None] - pos[None, :]  # how far key j lies before query i
        allowed = (offset >= 0) & (offset < self.window_size)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
