# expect: lesson=gqa name=GroupedQueryAttention exit=0
# A Llama-shaped layer without its rotary part: it takes position_ids (and a cache flag) and does not need them.
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups):
        super().__init__()
        self.heads, self.groups = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.q_proj = nn.Linear(d_in, d_out, bias=False)
        self.k_proj = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x, position_ids, use_cache):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.groups, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.groups, self.head_dim).transpose(1, 2)
        k = k.repeat_interleave(self.heads // self.groups, dim=1)
        v = v.repeat_interleave(self.heads // self.groups, dim=1)
        scores = q @ k.transpose(-2, -1) / self.head_dim**0.5
        later = torch.arange(t)[None, :] > position_ids[0][:, None]
        weights = scores.masked_fill(later, float("-inf")).softmax(-1)
        return self.o_proj((weights @ v).transpose(1, 2).reshape(b, t, -1))
