# expect: lesson=multihead name=MultiHeadAttention exit=0
# torch's nn.MultiheadAttention behind the lesson's signature, asked for its weights too (need_weights=True), so torch
# attends on (batch·heads, T, d) and scales the queries first; a boolean causal attn_mask cut to the tokens.
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    """The lesson's signature around torch's own layer (its in_proj_weight holds query, key and value)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.context_length = context_length
        self.mha = nn.MultiheadAttention(
            embed_dim=d_out,
            num_heads=num_heads,
            dropout=dropout,
            bias=qkv_bias,
            add_bias_kv=qkv_bias,
            batch_first=True,
        )
        self.need_weights = True
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())

    def forward(self, x):
        batch, num_tokens, _ = x.shape
        mask = self.mask[:num_tokens, :num_tokens] if num_tokens <= self.context_length else None
        out, _ = self.mha(x, x, x, attn_mask=mask, need_weights=self.need_weights)
        return out
