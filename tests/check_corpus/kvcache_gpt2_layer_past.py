# expect: lesson=kvcache name=GPT2Attention exit=0
# GPT-2's attention as Hugging Face wrote it: forward(hidden_states, layer_past, use_cache) returns
# (output, present), and present is None unless use_cache=True; a fused c_attn cut in three.
import torch
import torch.nn as nn


class GPT2Attention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.embed_dim = d_out
        self.c_attn = nn.Linear(d_in, 3 * d_out, bias=False)
        mask = torch.tril(torch.ones((context_length, context_length), dtype=torch.bool))
        self.register_buffer("bias", mask.view(1, context_length, context_length), persistent=False)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2)) / (value.size(-1) ** 0.5)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, key_length - query_length : key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        attn_weights = torch.where(causal_mask, attn_weights, torch.full([], mask_value, dtype=attn_weights.dtype))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states, layer_past=None, use_cache=False):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        present = (key, value) if use_cache is True else None
        return self._attn(query, key, value), present
