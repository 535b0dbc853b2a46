# expect: lesson=window name=SlidingWindowAttention exit=0
# torch's boolean attn_mask convention (True = hidden): the caller's causal mask, widened by the module's own band.
import torch
import torch.nn as nn


class SlidingWindowAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, window_size):
        super().__init__()
        self.window_size = window_size
        self.q = nn.Linear(d_in, d_out, bias=False)
        self.k = nn.Linear(d_in, d_out, bias=False)
        self.v = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x, attn_mask):
        t = x.size(-2)
        pos = torch.arange(t, device=x.device)
        hidden = attn_mask | (pos[:, None] - pos[None, :] >= self.window_size)
        scores = (self.q(x) @ self.k(x).transpose(-2, -1)) * self.q.out_features**-0.5
        return scores.masked_fill(hidden, float("-inf")).softmax(dim=-1) @ self.v(x)
