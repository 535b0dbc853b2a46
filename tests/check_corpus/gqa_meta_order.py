# expect: lesson=gqa name=Attention exit=0
# Meta's Llama names and order: wq, wk, wv, wo, the sizes as n_heads and n_kv_heads before max_seq_len, the
# key/value heads widened with expand and reshape in (b, T, heads, d) layout.
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d_in, d_out, n_heads, n_kv_heads, max_seq_len=2048):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_out // n_heads
        self.wq = nn.Linear(d_in, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_in, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_in, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d_out, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim)
        k = self.wk(x).view(b, t, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(b, t, self.n_kv_heads, self.head_dim)
        rep = self.n_heads // self.n_kv_heads
        wide = (b, t, self.n_kv_heads, rep, self.head_dim)
        k = k[:, :, :, None, :].expand(wide).reshape(b, t, self.n_heads, self.head_dim)
        v = v[:, :, :, None, :].expand(wide).reshape(b, t, self.n_heads, self.head_dim)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        s = q @ k.transpose(2, 3) / self.head_dim**0.5
        s = s + torch.triu(torch.full((t, t), float("-inf")), 1)
        out = torch.softmax(s.float(), dim=-1) @ v
        return self.wo(out.transpose(1, 2).contiguous().view(b, t, -1))
