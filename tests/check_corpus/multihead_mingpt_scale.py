# expect: lesson=multihead name=build exit=1 stage=scaling diagnosis=scale_wrong
# minGPT's style with one mistake: the scores divided by the head width itself, not its square root.
import torch
import torch.nn as nn
from torch.nn import functional as F


class Settings:
    """minGPT passes one plain object whose attributes the layers read."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        lower = torch.tril(torch.ones(config.block_size, config.block_size))
        self.register_buffer("bias", lower.view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


def build(d_in, d_out, context_length, dropout, num_heads):
    cfg = Settings(n_embd=d_out, n_head=num_heads, block_size=context_length, attn_pdrop=dropout, resid_pdrop=dropout)
    return CausalSelfAttention(cfg)
