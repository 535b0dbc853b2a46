"""A fresh capture of nn.MultiheadAttention with a mask verifies clean at a size where BLAS rounds its own way.

Its masked scores are ``baddbmm(mask, q, kᵀ)``: a library's result read through
the entry-by-entry recomputation of an elementwise op, which must accept it
within the bound of its check, as the plain recomputation does.
"""

from __future__ import annotations

import torch

import tracer


def test_masked_nn_multihead_attention_at_t256_verifies_clean() -> None:
    torch.manual_seed(0)
    t, d = 256, 64
    mha = torch.nn.MultiheadAttention(d, 4, batch_first=True)
    x = torch.rand(1, t, d, generator=torch.Generator().manual_seed(1))
    mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
    with tracer.capture() as cap:
        out, _ = mha(x, x, x, attn_mask=mask)
    plain, _ = mha(x, x, x, attn_mask=mask)
    assert torch.equal(out, plain)
    check = cap.trace.verify()
    assert check.ok, check.summary()
