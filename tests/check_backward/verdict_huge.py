"""Returns a dV far larger than any input: a verdict of shape, not data too large to send."""

import torch


def attention_backward(Q, K, V, dO, causal=False):
    return torch.zeros_like(Q), torch.zeros_like(K), torch.zeros(1000, 1000)
