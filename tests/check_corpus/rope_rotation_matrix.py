# expect: lesson=rope name=RotationMatrixAttention exit=0
# RoPE as the paper writes it: one d x d block rotation matrix per position (the half-split pairs i and
# i + d/2), built once as a buffer and applied with einsum.
import math

import torch
import torch.nn as nn


def rotation_matrices(d, positions, base=10000.0):
    half = d // 2
    theta = base ** (-2 * torch.arange(half, dtype=torch.float32) / d)
    angle = positions.float()[:, None] * theta[None, :]  # (T, d/2)
    cos, sin = torch.cos(angle), torch.sin(angle)
    r = torch.zeros(len(positions), d, d)
    idx = torch.arange(half)
    r[:, idx, idx] = cos
    r[:, idx + half, idx + half] = cos
    r[:, idx, idx + half] = -sin
    r[:, idx + half, idx] = sin
    return r


class RotationMatrixAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.register_buffer("rot", rotation_matrices(d_out, torch.arange(context_length)))

    def forward(self, x):
        t = x.shape[1]
        rot = self.rot[:t]
        q = torch.einsum("tij,btj->bti", rot, self.W_query(x))
        k = torch.einsum("tij,btj->bti", rot, self.W_key(x))
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        weights = torch.softmax(scores.masked_fill(future, -math.inf), dim=-1)
        return weights @ self.W_value(x)
