# expect: lesson=gqa name=GQA exit=0
# One fused projection as Phi-3's qkv_proj lays it out: the query columns, then the narrower key and value
# columns, split by their widths; the groups widened with repeat_interleave, then PyTorch's fused attention.
import torch.nn as nn
import torch.nn.functional as F


class GQA(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, num_kv_groups):
        super().__init__()
        self.h, self.g, self.dh = num_heads, num_kv_groups, d_out // num_heads
        self.qkv = nn.Linear(d_in, (num_heads + 2 * num_kv_groups) * self.dh, bias=False)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).split([self.h * self.dh, self.g * self.dh, self.g * self.dh], dim=-1)
        q = q.view(b, t, self.h, self.dh).transpose(1, 2)
        k = k.view(b, t, self.g, self.dh).transpose(1, 2).repeat_interleave(self.h // self.g, dim=1)
        v = v.view(b, t, self.g, self.dh).transpose(1, 2).repeat_interleave(self.h // self.g, dim=1)
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(z.transpose(1, 2).reshape(b, t, -1))
