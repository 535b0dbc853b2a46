"""The README's own attention function, as a file ``--torch`` can run.

``attn-trace explain --torch examples/my_attention.py:run "weights[2,1]"``
captures :func:`run`: it takes no arguments, builds its inputs (the first
three of the tutorial's embeddings, so no seed is needed), calls
:func:`my_attention` and returns the output.  attn-trace names every step
after the variables here, so ``scores[2,1]`` is a dot product and
``weights[2,1]`` one entry of a softmax row; ``attn-trace steps --torch
examples/my_attention.py:run`` lists them all.
"""

from __future__ import annotations

import torch


def my_attention(x: torch.Tensor) -> torch.Tensor:
    """Self-attention without trainable weights: scores, softmax over each row, weighted sum."""
    scores = x @ x.T
    weights = torch.softmax(scores, dim=-1)
    return weights @ x


def run() -> torch.Tensor:
    """Build the inputs, run :func:`my_attention` on them and return its output (what ``--torch`` calls)."""
    inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]])
    return my_attention(inputs)
