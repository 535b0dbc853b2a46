# expect: lesson=gqa name=GroupedQueryAttention exit=0
# PyTorch's fused attention does the grouping itself: enable_gqa=True with 4 query heads and 2 key/value
# heads, is_causal=True for the mask.
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups, qkv_bias=False):
        super().__init__()
        self.h, self.g, self.dh = num_heads, num_kv_groups, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.dh, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.dh, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.h, self.dh).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.g, self.dh).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.g, self.dh).transpose(1, 2)
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.out_proj(z.transpose(1, 2).reshape(b, t, self.h * self.dh))
