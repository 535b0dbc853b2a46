# expect: lesson=rope name=RotaryAttention exit=0 style=interleaved
# Meta's original Llama style: each pair of neighbours is one complex number, turned by torch.polar's e^(i m theta).
import torch
import torch.nn as nn


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(2)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(2)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RotaryAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, qkv_bias=False):
        super().__init__()
        self.wq = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.wk = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.wv = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.freqs_cis = precompute_freqs_cis(d_out, context_length)

    def forward(self, x):
        b, t, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq, xk = apply_rotary_emb(xq, xk, self.freqs_cis[:t])
        scores = xq @ xk.transpose(1, 2) / xk.shape[-1] ** 0.5
        mask = torch.full((t, t), float("-inf")).triu(1)
        weights = torch.softmax(scores + mask, dim=-1)
        return weights @ xv
