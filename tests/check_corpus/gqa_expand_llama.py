# expect: lesson=gqa name=LlamaAttention exit=0
# Llama's layout and names (q_proj, k_proj, v_proj, o_proj) and its repeat_kv: the groups widened with
# expand and reshape instead of repeat_interleave; the mask added as -inf.
import math

import torch
import torch.nn as nn


def repeat_kv(hidden_states, n_rep):
    b, kv_heads, t, d = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(b, kv_heads, n_rep, t, d)
    return hidden_states.reshape(b, kv_heads * n_rep, t, d)


class LlamaAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups, qkv_bias=False):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.num_key_value_groups = num_heads // num_kv_groups
        self.q_proj = nn.Linear(d_in, num_heads * self.head_dim, bias=qkv_bias)
        self.k_proj = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)
        self.v_proj = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_out, bias=False)

    def forward(self, hidden_states):
        b, t, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(b, t, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(b, t, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)
        attn_weights = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        causal_mask = torch.full((t, t), float("-inf")).triu(1)
        attn_weights = torch.softmax(attn_weights + causal_mask, dim=-1)
        attn_output = (attn_weights @ v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(attn_output)
