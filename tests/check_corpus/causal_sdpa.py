# expect: lesson=causal name=CausalSDPA exit=0
# PyTorch's fused kernel does the scaling, the causal mask, the softmax and the dropout.
import torch.nn as nn
import torch.nn.functional as F


class CausalSDPA(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.p = dropout

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0, is_causal=True)
