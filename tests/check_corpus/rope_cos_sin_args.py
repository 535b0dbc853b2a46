# expect: lesson=rope name=RoPEAttention exit=0
# The newer Hugging Face signature: the model computes (cos, sin) once and hands the pair to every layer.
import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RoPEAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.q_proj = nn.Linear(d_in, d_out, bias=False)
        self.k_proj = nn.Linear(d_in, d_out, bias=False)
        self.v_proj = nn.Linear(d_in, d_out, bias=False)

    def forward(self, hidden_states, position_embeddings):
        cos, sin = position_embeddings
        q = self.q_proj(hidden_states)
        k = self.k_proj(hidden_states)
        v = self.v_proj(hidden_states)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
