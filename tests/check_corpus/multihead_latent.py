# expect: lesson=multihead name=MultiHeadAttention exit=1 stage=structure diagnosis=latent_kv
# Latent attention: keys and values come from one shared low-rank latent (kv_down), then k_up and v_up.
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        d_latent = d_out // 2
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.kv_down = nn.Linear(d_in, d_latent, bias=False)
        self.k_up = nn.Linear(d_latent, d_out, bias=False)
        self.v_up = nn.Linear(d_latent, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        latent = self.kv_down(x)
        keys = self.k_up(latent).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.v_up(latent).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / self.head_dim**0.5, dim=-1))
        context_vec = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)
