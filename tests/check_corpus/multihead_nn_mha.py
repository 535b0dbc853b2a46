# expect: lesson=multihead name=MHA exit=0
# torch's own nn.MultiheadAttention (in_proj_weight, out_proj) with a boolean causal mask; one width, embed_dim.
import torch
import torch.nn as nn


class MHA(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, dropout=0.0):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, bias=False, batch_first=True)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        t = x.shape[1]
        out, _ = self.attn(x, x, x, attn_mask=self.mask[:t, :t], need_weights=False)
        return out
