# expect: lesson=gqa name=GroupedQueryAttention exit=1 stage=scaling diagnosis=scale_missing
# Hugging Face-shaped, returning (attn_output, attn_weights), but the scores are never divided by sqrt(head_dim).
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups):
        super().__init__()
        self.num_heads, self.num_kv = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.q_proj = nn.Linear(d_in, d_out, bias=False)
        self.k_proj = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_out, d_out, bias=False)

    def forward(self, hidden_states, attention_mask, output_attentions):
        b, t, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(b, t, self.num_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(b, t, self.num_kv, self.head_dim).transpose(1, 2)
        rep = self.num_heads // self.num_kv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        attn_weights = torch.softmax(q @ k.transpose(2, 3) + attention_mask, dim=-1)
        out = (attn_weights @ v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out), (attn_weights if output_attentions else None)
