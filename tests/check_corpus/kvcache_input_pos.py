# expect: lesson=kvcache name=CausalSelfAttention exit=0
# gpt-fast's style: a KVCache module of preallocated buffers updated with index_copy_ at input_pos (a tensor
# of the new tokens' positions), the mask's rows picked by input_pos from a full causal mask.
import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCache(nn.Module):
    def __init__(self, max_batch_size, max_seq_length, head_dim):
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(max_batch_size, 1, max_seq_length, head_dim))
        self.register_buffer("v_cache", torch.zeros(max_batch_size, 1, max_seq_length, head_dim))

    def update(self, input_pos, k_val, v_val):
        b = k_val.shape[0]
        self.k_cache[:b].index_copy_(2, input_pos, k_val)
        self.v_cache[:b].index_copy_(2, input_pos, v_val)
        return self.k_cache[:b], self.v_cache[:b]


class CausalSelfAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.wqkv = nn.Linear(d_in, 3 * d_out, bias=False)
        self.d_out = d_out
        self.kv_cache = KVCache(4, context_length, d_out)
        self.register_buffer("causal_mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)))

    def forward(self, x, input_pos):
        b, t, _ = x.shape
        q, k, v = self.wqkv(x).split(self.d_out, dim=-1)
        q, k, v = (a.unsqueeze(1) for a in (q, k, v))  # (b, 1 head, t, d)
        k, v = self.kv_cache.update(input_pos, k, v)
        mask = self.causal_mask[None, None, input_pos]  # (1, 1, t, context_length)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return y.squeeze(1)
