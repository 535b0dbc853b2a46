# expect: lesson=multihead name=T5Attention exit=1 stage=scaling diagnosis=scale_missing
# Hugging Face's T5 attention: T5Attention(config, has_relative_attention_bias=False) reads d_model, d_kv,
# num_heads and dropout_rate; its scores are never divided by the square root of d_kv (T5 folds it into the
# initialisation), and the caller's additive mask joins the position bias. Built without a relative bias, it is
# lesson multihead but for the scaling, which is what the check names.
import torch
from torch import nn


class T5Config:
    def __init__(
        self,
        vocab_size=32128,
        d_model=512,
        d_kv=64,
        d_ff=2048,
        num_layers=6,
        num_heads=8,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
        dropout_rate=0.1,
        is_decoder=False,
    ):
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.d_kv = d_kv
        self.d_ff = d_ff
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.relative_attention_num_buckets = relative_attention_num_buckets
        self.relative_attention_max_distance = relative_attention_max_distance
        self.dropout_rate = dropout_rate
        self.is_decoder = is_decoder


class T5Attention(nn.Module):
    def __init__(self, config: T5Config, has_relative_attention_bias=False, layer_idx=None):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = config.relative_attention_num_buckets
        self.d_model = config.d_model
        self.key_value_proj_dim = config.d_kv
        self.n_heads = config.num_heads
        self.dropout = config.dropout_rate
        self.inner_dim = self.n_heads * self.key_value_proj_dim
        self.q = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, self.d_model, bias=False)
        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets, self.n_heads)

    def forward(
        self,
        hidden_states,
        mask=None,
        key_value_states=None,
        position_bias=None,
        past_key_value=None,
        layer_head_mask=None,
        query_length=None,
        use_cache=False,
        output_attentions=False,
    ):
        batch_size, seq_length = hidden_states.shape[:2]
        query_states = self.q(hidden_states).view(batch_size, -1, self.n_heads, self.key_value_proj_dim)
        query_states = query_states.transpose(1, 2)
        source = hidden_states if key_value_states is None else key_value_states
        key_states = self.k(source).view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        value_states = self.v(source).view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            key_length = key_states.shape[-2]
            position_bias = torch.zeros((1, self.n_heads, seq_length, key_length), dtype=scores.dtype)
            if mask is not None:
                position_bias = position_bias + mask[:, :, :, :key_length]
        scores = scores + position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)
        attn_output = self.o(attn_output)
        outputs = (attn_output, None, position_bias)
        if output_attentions:
            outputs = outputs + (attn_weights,)
        return outputs
