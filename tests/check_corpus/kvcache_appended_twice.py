# expect: lesson=kvcache name=CachedAttention exit=1 stage=generation diagnosis=kv_appended_twice
# The new keys and values joined to the cache to attend, then joined once more to the cache it returns:
# from the second call on every earlier token is in the cache twice.
import torch
import torch.nn as nn


class CachedAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length):
        super().__init__()
        self.q = nn.Linear(d_in, d_out, bias=False)
        self.k = nn.Linear(d_in, d_out, bias=False)
        self.v = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x_new, kv_cache=None):
        k_new, v_new = self.k(x_new), self.v(x_new)
        k, v = k_new, v_new
        if kv_cache is not None:
            k = torch.cat((kv_cache[0], k_new), dim=1)
            v = torch.cat((kv_cache[1], v_new), dim=1)
        n = x_new.shape[1]
        past = k.shape[1] - n
        hidden = torch.arange(k.shape[1])[None, :] > past + torch.arange(n)[:, None]
        scores = (self.q(x_new) @ k.transpose(1, 2) / k.shape[-1] ** 0.5).masked_fill(hidden, -torch.inf)
        out = torch.softmax(scores, dim=-1) @ v
        return out, (torch.cat((k, k_new), dim=1), torch.cat((v, v_new), dim=1))  # appended a second time
