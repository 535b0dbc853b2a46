"""A student's answer for lesson ``temperature``: ``attn-trace check solution.py:attention --lesson temperature``.

The tutorial's self-attention with the scores divided by the temperature
before the softmax; the check calls it once on the tutorial's six tokens
and finds each of the lesson's steps among the tensors it computes.
"""

import torch

TAU = 2.0
"""The lesson's temperature."""


def attention(inputs: torch.Tensor) -> torch.Tensor:
    """``softmax(x xᵀ / τ) x`` for the token vectors ``inputs`` (T x d)."""
    scores = inputs @ inputs.T
    weights = torch.softmax(scores / TAU, dim=-1)
    return weights @ inputs
