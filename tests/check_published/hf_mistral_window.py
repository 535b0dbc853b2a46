# expect: lesson=gqa name=MistralAttention exit=0
# expect: lesson=window name=MistralAttention exit=0
# A Mistral-style layer as Hugging Face's eager path runs it: the sliding window is not in the layer but in the
# additive (batch, 1, T, T) mask its model builds from config.sliding_window; the layer adds whatever mask it is
# given. It is grouped-query attention (its window left at the config's default); for lesson window, which has one
# head and no output projection, o_proj is set to the identity and the check passes the band its model would build.
import torch
from torch import nn


class MistralConfig:
    def __init__(
        self,
        hidden_size=4096,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=None,
        max_position_embeddings=32768,
        rope_theta=10000.0,
        sliding_window=4096,
        attention_dropout=0.0,
    ):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.head_dim = head_dim or hidden_size // num_attention_heads
        self.max_position_embeddings = max_position_embeddings
        self.rope_theta = rope_theta
        self.sliding_window = sliding_window
        self.attention_dropout = attention_dropout


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class MistralAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = config.head_dim
        self.groups = config.num_attention_heads // config.num_key_value_heads
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=False)
        self.sliding_window = config.sliding_window

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None, **kwargs):
        shape = (*hidden_states.shape[:-1], -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = (t.unsqueeze(1) for t in position_embeddings)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.groups, dim=1)
        v = v.repeat_interleave(self.groups, dim=1)
        w = (q @ k.transpose(2, 3)) * self.head_dim**-0.5
        if attention_mask is not None:
            w = w + attention_mask[:, :, :, : k.shape[-2]]
        w = w.softmax(dim=-1)
        return self.o_proj((w @ v).transpose(1, 2).reshape(*hidden_states.shape[:-1], -1)), w
