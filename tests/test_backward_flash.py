"""Lesson flash's backward pass: FlashAttention-2's, the weights recomputed block by block from m and ℓ.

The reference is causal attention written from the maths in plain torch
(no blocks, no online softmax): the flash trace's inputs and weights go in,
``torch.autograd`` gives the gradients.  Blocks that divide the text and
blocks that do not (a padded last block) are both checked.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tracer
from tracer.core import exact

BLOCKS = (1, 2, 4, 6)


def values(t: tracer.Trace, name: str) -> np.ndarray:
    return np.asarray(t[name].node.value)


def autograd(t: tracer.Trace, dtype: torch.dtype, upstream: np.ndarray) -> dict[str, np.ndarray]:
    """Causal attention's gradients by autograd, for the upstream gradient the trace recorded."""
    leaves = {n: torch.tensor(values(t, n), dtype=dtype, requires_grad=True) for n in ("x", "W_query", "W_key")}
    leaves["W_value"] = torch.tensor(values(t, "W_value"), dtype=dtype, requires_grad=True)
    x = leaves["x"]
    q, k, v = (x @ leaves[n] for n in ("W_query", "W_key", "W_value"))
    n = q.shape[0]
    s = (q @ k.T).masked_fill(torch.ones(n, n).triu(1).bool(), -math.inf) / math.sqrt(k.shape[-1])
    z = torch.softmax(s, dim=-1) @ v
    (z * torch.tensor(upstream, dtype=dtype)).sum().backward()
    return {f"d{name}": leaf.grad.numpy() for name, leaf in leaves.items() if leaf.grad is not None} | {
        "z": z.detach().numpy()
    }


@pytest.mark.parametrize("block", BLOCKS)
def test_float64_gradients_are_autograds(block: int) -> None:
    t = tracer.trace_lesson("flash", block=block, backward=True, dtype="float64")
    back = t.meta["backward"]
    assert back["output"] == "flash.z" and back["upstream"] == "dflash.z"
    ref = autograd(t, torch.float64, values(t, "dflash.z"))
    np.testing.assert_allclose(values(t, "flash.z"), ref["z"], rtol=1e-12, atol=1e-14)
    for grad in back["gradients"]:
        np.testing.assert_allclose(values(t, grad), ref[grad], rtol=1e-10, atol=1e-13, err_msg=grad)
    result = t.verify()
    assert result.ok and not result.unchecked  # every backward node recomputed from its inputs


@pytest.mark.parametrize("block", BLOCKS)
def test_float32_within_the_stated_bound(block: int) -> None:
    """Float32 gradients against float64 autograd: within 64 float32 ulps of each gradient's scale.

    The same bound the other lessons' backward passes state (``docs/step-ids.md``).
    """
    t = tracer.trace_lesson("flash", block=block, backward=True)
    ref = autograd(t, torch.float64, values(t, "dflash.z").astype(np.float64))
    for grad in t.meta["backward"]["gradients"]:
        scale = np.abs(ref[grad]).max()
        assert np.abs(values(t, grad) - ref[grad]).max() <= 64 * np.finfo(np.float32).eps * scale, grad


def test_d_is_the_softmax_backwards_row_sum_and_p_the_forwards_weights() -> None:
    t = tracer.trace_lesson("flash", block=4, backward=True, dtype="float64")
    p = values(t, "recomp.p").reshape(6, -1)[:, :6]  # blocks laid out as keys; the padding's two are dropped
    np.testing.assert_allclose(p, values(t, "causal.alpha"), rtol=1e-14, atol=1e-16)
    assert (values(t, "recomp.p").reshape(6, -1)[:, 6:] == 0).all()  # a padded key's weight: exactly 0
    dp = values(t, "dflash.p").reshape(6, -1)[:, :6]
    row_sum = (p * dp).sum(axis=1)  # Σ_j P_ij dP_ij, the ordinary softmax backward's row sum
    np.testing.assert_allclose(values(t, "dflash.D"), row_sum, rtol=1e-13)
    hide = values(t, "flash.hide") != 0
    domega = values(t, "dflash.omega")
    assert (domega[hide] == 0).all() and not np.signbit(domega[hide]).any()  # masked: exactly +0


def test_the_weights_are_recomputed_once_and_nothing_else_is_exponentiated() -> None:
    """The backward's only exps are the recomputed weights, one per (query, block, place): counted."""
    x = torch.rand(10, 3, generator=torch.Generator().manual_seed(3))
    with exact.counting() as forward:
        plain = tracer.trace_lesson("flash", inputs=x, block=4)
    with exact.counting() as both:
        t = tracer.trace_lesson("flash", inputs=x, block=4, backward=True)
    blocks = math.ceil(10 / 4)
    assert both.entries - forward.entries == 10 * blocks * 4
    recomputed = [n for n in t.nodes if n.stage == "drecompute"]
    assert [n.name for n in recomputed] == ["recomp.shift", "recomp.exp", "recomp.p"]
    assert all(n.value.shape == (10, blocks, 4) for n in recomputed)
    assert len(t) - len(plain) > 0 and t.verify().ok


def test_an_upstream_gradient_of_ones_and_a_bad_one() -> None:
    ones = np.ones((6, 2))
    t = tracer.trace_lesson("flash", grad_output=ones, dtype="float64")
    assert t.meta["backward"]["loss"] == "given"
    ref = autograd(t, torch.float64, ones)
    np.testing.assert_allclose(values(t, "dx"), ref["dx"], rtol=1e-10, atol=1e-13)
    with pytest.raises(tracer.errors.InputError, match="has shape 2 x 6"):
        tracer.trace_lesson("flash", grad_output=np.ones((2, 6)))
