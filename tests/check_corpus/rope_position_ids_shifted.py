# expect: lesson=rope name=RoPEAttention exit=1 stage=rope diagnosis=rope_positions
# Handed 0-based position_ids, the layer adds one "so the first token moves too": every angle is one step ahead.
import torch
import torch.nn as nn


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class RoPEAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, base=10000.0):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.register_buffer("inv_freq", base ** (-torch.arange(0, d_out, 2).float() / d_out))

    def forward(self, x, position_ids):
        t = x.shape[1]
        angles = (position_ids + 1)[..., None].float() * self.inv_freq
        cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
        q, k = self.W_query(x), self.W_key(x)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        scores = q @ k.transpose(1, 2) / k.shape[-1] ** 0.5
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        return scores.softmax(-1) @ self.W_value(x)
