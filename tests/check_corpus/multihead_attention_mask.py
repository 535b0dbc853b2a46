# expect: lesson=multihead name=MultiHeadAttention exit=0
# An encoder-decoder style layer that leaves the mask to its caller and hands it to SDPA as attn_mask.
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.query = nn.Linear(d_in, d_out, bias=False)
        self.key = nn.Linear(d_in, d_out, bias=False)
        self.value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.p = dropout

    def split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x, attention_mask):
        b, n, _ = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        p = self.p if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, dropout_p=p)
        return self.out_proj(out.transpose(1, 2).reshape(b, n, -1))
