# expect: lesson=rope name=RotaryAttention exit=0
# Hugging Face's way: the layer is handed position_ids (batch, T) and turns them into cos and sin itself.
import torch
import torch.nn as nn


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class RotaryAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, rope_theta=10000.0):
        super().__init__()
        self.q_proj = nn.Linear(d_in, d_out, bias=False)
        self.k_proj = nn.Linear(d_in, d_out, bias=False)
        self.v_proj = nn.Linear(d_in, d_out, bias=False)
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, d_out, 2, dtype=torch.float32) / d_out))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, hidden_states, position_ids):
        seq_len = hidden_states.shape[1]
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states * cos + rotate_half(query_states) * sin
        key_states = key_states * cos + rotate_half(key_states) * sin
        attn_weights = query_states @ key_states.transpose(-1, -2) / query_states.shape[-1] ** 0.5
        future = torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1)
        attn_weights = attn_weights.masked_fill(future, float("-inf"))
        attn_weights = attn_weights.softmax(dim=-1)
        return attn_weights @ value_states
