# expect: lesson=gqa name=GroupedQueryAttention exit=0
# A Hugging Face eager-style layer: additive attention_mask in, (attn_output, attn_weights) out.
import torch
import torch.nn as nn


def repeat_kv(hidden_states, n_rep):
    """(batch, kv_heads, seq, dim) -> (batch, kv_heads * n_rep, seq, dim), each key/value head shared by n_rep."""
    batch, kv_heads, seq, dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, kv_heads, n_rep, seq, dim)
    return hidden_states.reshape(batch, kv_heads * n_rep, seq, dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.num_key_value_groups = num_heads // num_kv_groups
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(d_in, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_out, bias=False)

    def forward(self, hidden_states, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = repeat_kv(self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2), self.num_key_value_groups)
        value_states = repeat_kv(
            self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2), self.num_key_value_groups
        )
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(*input_shape, -1)
        return self.o_proj(attn_output), attn_weights
