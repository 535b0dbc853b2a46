# expect: lesson=causal name=CausalAttention exit=1 stage=structure diagnosis=latent_kv
# Latent attention in one head: keys and values are read back up from one narrow latent of the inputs.
import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.kv_down = nn.Linear(d_in, 1, bias=False)
        self.k_up = nn.Linear(1, d_out, bias=False)
        self.v_up = nn.Linear(1, d_out, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        latent = self.kv_down(x)
        keys, values = self.k_up(latent), self.v_up(latent)
        attn_scores = self.W_query(x) @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        return attn_weights @ values
