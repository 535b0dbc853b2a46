# expect: lesson=window name=WindowAttention exit=0
# PyTorch's fused attention with a float attn_mask: 0 inside the window, -inf outside, added to the scores.
import torch
import torch.nn as nn
import torch.nn.functional as F


class WindowAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        pos = torch.arange(context_length)
        far = pos[:, None] - pos[None, :]  # how many places key j lies before query i
        bias = torch.where((far >= 0) & (far < window_size), 0.0, float("-inf"))
        self.register_buffer("bias", bias)

    def forward(self, x):
        t = x.shape[1]
        return F.scaled_dot_product_attention(
            self.W_query(x), self.W_key(x), self.W_value(x), attn_mask=self.bias[:t, :t]
        )
