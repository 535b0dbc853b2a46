# expect: lesson=rope name=RotaryAttention exit=0 style=interleaved
# GPT-J's real-number form of the interleaved pairing: sin and cos repeated twice in a row, and
# rotate_every_two turning each neighbour pair (x0, x1) into (-x1, x0).
import torch
import torch.nn as nn


def fixed_pos_embedding(dim, seq_len):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2) / dim))
    sinusoid = torch.einsum("i,j->ij", torch.arange(seq_len, dtype=torch.float), inv_freq).float()
    return torch.sin(sinusoid), torch.cos(sinusoid)


def rotate_every_two(x):
    x1 = x[:, :, ::2]
    x2 = x[:, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary_pos_emb(x, sincos):
    sin, cos = (t.repeat_interleave(2, dim=-1)[None] for t in sincos)
    return (x * cos) + (rotate_every_two(x) * sin)


class RotaryAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.rotary_dim = d_out

    def forward(self, x):
        b, t, _ = x.shape
        sincos = fixed_pos_embedding(self.rotary_dim, t)
        q = apply_rotary_pos_emb(self.W_query(x), sincos)
        k = apply_rotary_pos_emb(self.W_key(x), sincos)
        scores = q @ k.transpose(1, 2)
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        weights = torch.softmax(scores / self.rotary_dim**0.5, dim=-1)
        return weights @ self.W_value(x)
