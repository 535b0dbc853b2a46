# expect: lesson=window name=SWA exit=0
# The window named as Mistral's config names it (sliding_window) and given before the sequence length; the band
# tested on positions each call as j <= i and j > i - w.
import torch
import torch.nn as nn


class SWA(nn.Module):
    def __init__(self, d_in, d_out, sliding_window, max_seq_len=4096):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.window = sliding_window

    def forward(self, x):
        t = x.shape[1]
        i = torch.arange(t)[:, None]
        j = torch.arange(t)[None, :]
        keep = (j <= i) & (j > i - self.window)
        s = self.W_query(x) @ self.W_key(x).transpose(1, 2) / self.W_key.out_features**0.5
        return torch.softmax(s.masked_fill(~keep, float("-inf")), -1) @ self.W_value(x)
