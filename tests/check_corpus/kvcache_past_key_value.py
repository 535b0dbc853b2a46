# expect: lesson=kvcache name=CachedSelfAttention exit=0
# Hugging Face style: forward(hidden_states, past_key_value) returns (output, present); the cache is a tuple of
# (b, heads, T, d) tensors grown with torch.cat on dim=-2, and the mask is an additive one offset by the past length.
import torch
import torch.nn as nn


class CachedSelfAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads=1):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.q_proj = nn.Linear(d_in, d_out, bias=False)
        self.k_proj = nn.Linear(d_in, d_out, bias=False)
        self.v_proj = nn.Linear(d_in, d_out, bias=False)

    def _shape(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # (b, heads, t, d)

    def forward(self, hidden_states, past_key_value=None):
        b, q_len, _ = hidden_states.shape
        query = self._shape(self.q_proj(hidden_states))
        key = self._shape(self.k_proj(hidden_states))
        value = self._shape(self.v_proj(hidden_states))
        if past_key_value is not None:
            key = torch.cat([past_key_value[0], key], dim=-2)
            value = torch.cat([past_key_value[1], value], dim=-2)
        present = (key, value)
        past_len = key.shape[-2] - q_len
        mask = torch.full((q_len, key.shape[-2]), float("-inf")).triu(past_len + 1)  # query i sees keys <= past_len+i
        scores = query @ key.transpose(-1, -2) / self.head_dim**0.5 + mask
        probs = torch.softmax(scores, dim=-1)
        out = (probs @ value).transpose(1, 2).reshape(b, q_len, -1)
        return out, present
