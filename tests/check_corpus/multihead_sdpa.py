# expect: lesson=multihead name=MHA exit=0
# Heads split with unflatten, attention by F.scaled_dot_product_attention, joined with flatten.
import torch.nn as nn
import torch.nn.functional as F


class MHA(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = dropout

    def forward(self, x):
        q, k, v = (
            f(x).unflatten(-1, (self.num_heads, -1)).transpose(1, 2) for f in (self.W_query, self.W_key, self.W_value)
        )
        ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.out_proj(ctx.transpose(1, 2).flatten(2))
