# expect: lesson=multihead name=MultiHeadAttention exit=0
# Fused projections, SDPA's own causal flag; like many layers it returns (output, None) when not asked for weights.
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.n_head, self.d_head = num_heads, d_out // num_heads
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=False)
        self.proj = nn.Linear(d_out, d_out)
        self.p_drop = dropout

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_head, self.d_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.p_drop if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(b, t, -1)), None
