# expect: lesson=rope name=RoPEAttention exit=1 stage=structure diagnosis=sizes_ignored
# The frequencies written for the lesson's width: base^(-2i/4) whatever d_out is. Right at d_out = 4, the
# wrong angles at any other width.
import torch
import torch.nn as nn


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class RoPEAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, qkv_bias=False, base=10000.0):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        inv_freq = 1.0 / (base ** (torch.arange(0, d_out, 2).float() / 4))  # 4: the width it was tried at
        angles = torch.outer(torch.arange(context_length).float(), inv_freq)
        emb = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        cos, sin = self.cos[:num_tokens], self.sin[:num_tokens]
        queries = queries * cos + rotate_half(queries) * sin
        keys = keys * cos + rotate_half(keys) * sin
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
