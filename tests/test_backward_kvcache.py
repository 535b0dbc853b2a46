"""Lesson kvcache's backward pass: through every step of the generation and through the cache.

The reference is the generation written again in plain torch, step by step,
the cache grown with ``torch.cat``: autograd's gradient of each step's cache
tensor is what the trace's ``dstep<s>.cache.k`` must hold (a cached key's
gradient is the sum over every step that read it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tracer
from tests.hostile import seal
from tracer.core import serialize


def values(t: tracer.Trace, name: str) -> np.ndarray:
    return np.asarray(t.tensor(name))


def generated(t: tracer.Trace, upstream: np.ndarray | None = None) -> dict[str, torch.Tensor]:
    """Autograd of generation with a cache, in float64, every step's tensors kept by the trace's names."""
    leaf = {n: torch.tensor(values(t, n), dtype=torch.float64, requires_grad=True) for n in ("x", "W_query", "W_key")}
    leaf["W_value"] = torch.tensor(values(t, "W_value"), dtype=torch.float64, requires_grad=True)
    kept: dict[str, torch.Tensor] = dict(leaf)
    rows, ck, cv = [], None, None
    for s, (a, b) in enumerate(t.meta["steps"], start=1):
        x = leaf["x"][a - 1 : b]
        q, k, v = (x @ leaf[n] for n in ("W_query", "W_key", "W_value"))
        ck = k if ck is None else torch.cat((ck, k))
        cv = v if cv is None else torch.cat((cv, v))
        hidden = torch.arange(1, b + 1)[None, :] > torch.arange(a, b + 1)[:, None]
        p = torch.softmax((q @ ck.T).masked_fill(hidden, -math.inf) / math.sqrt(k.shape[-1]), dim=-1)
        rows.append(p @ cv)
        for name, tensor in (("q", q), ("k", k), ("cache.k", ck), ("cache.v", cv)):
            tensor.retain_grad()
            kept[f"step{s}.{name}"] = tensor
    z = torch.cat(rows)
    z.backward(z.detach() if upstream is None else torch.from_numpy(upstream))
    return {f"d{name}": tensor.grad for name, tensor in kept.items() if tensor.grad is not None}


@pytest.mark.parametrize("prompt", [1, 3, 5])
def test_every_steps_gradients_and_the_caches_are_autograds(prompt: int) -> None:
    t = tracer.trace_lesson("kvcache", backward=True, dtype="float64", prompt=prompt)
    ref = generated(t)
    steps = len(t.meta["steps"])
    assert steps == 6 - prompt + 1 and {f"dstep{steps}.cache.k", "dstep1.cache.k", "dW_key", "dx"} <= set(ref)
    for name, want in ref.items():
        np.testing.assert_allclose(values(t, name), want.numpy(), rtol=1e-10, atol=1e-13, err_msg=name)
    result = t.verify()
    assert result.ok and result.unchecked == ()


def test_a_cached_key_sums_the_gradients_of_every_step_that_read_it() -> None:
    t = tracer.trace_lesson("kvcache", backward=True, dtype="float64")  # steps: tokens 1-3, then 4, 5, 6
    assert t["dstep2.cache.k[2,1]"].inputs == ("dstep2.cache.k.read[2,1]", "dstep2.cache.k.later[2,1]")
    assert t["dstep2.cache.k.later[2,1]"].inputs == ("dstep3.cache.k[2,1]",)
    assert t["dstep4.cache.k[2,1]"].inputs[0] == "dstep4.cache.k[2,1].p[1]"  # the last step: its read alone
    reads = [values(t, "dstep4.cache.k")[:3]] + [values(t, f"dstep{s}.cache.k.read")[:3] for s in (1, 2, 3)]
    np.testing.assert_allclose(values(t, "dstep1.cache.k"), sum(reads), rtol=1e-12)
    np.testing.assert_array_equal(values(t, "dstep2.k"), values(t, "dstep2.cache.k")[3:4])  # its own new row
    assert t["dx[5,2]"].inputs == ("dstep3.x[1,2]",)  # token 5 came with step 3
    assert t["dW_value[1,1]"].inputs == ("dW_value.sum3[1,1]", "dW_value.step4[1,1]")  # each step's path, in turn


def test_a_later_key_gets_nothing_from_a_query_before_it() -> None:
    t = tracer.trace_lesson("kvcache", backward=True)
    d = values(t, "dstep1.omega")  # the prompt's scores: keys after their query are masked
    hidden = np.triu(np.ones_like(d), 1) != 0
    assert (d[hidden] == 0).all() and (d[~hidden] != 0).any()


def test_float64_agrees_with_central_finite_differences_of_the_generation() -> None:
    t = tracer.trace_lesson("kvcache", backward=True, dtype="float64")
    x = values(t, "x").astype(np.float64)
    h = 1e-6

    def loss(inputs: np.ndarray) -> float:
        again = tracer.trace_lesson("kvcache", inputs=inputs, dtype="float64")
        return 0.5 * float((values(again, "gen.z") ** 2).sum())

    for i, k in ((0, 0), (2, 1), (3, 2), (5, 0)):
        up, down = x.copy(), x.copy()
        up[i, k] += h
        down[i, k] -= h
        fd, got = (loss(up) - loss(down)) / (2 * h), float(values(t, "dx")[i, k])
        assert abs(fd - got) <= 1e-6 * max(abs(got), 1e-3), (i, k, fd, got)


def test_a_given_gradient_goes_back_through_the_cache() -> None:
    g = np.linspace(-1.0, 1.0, 12).reshape(6, 2)
    t = tracer.trace_lesson("kvcache", grad_output=g, dtype="float64")
    assert t.meta["backward"]["loss"] == "given"
    ref = generated(t, g)
    np.testing.assert_allclose(values(t, "dstep1.cache.v"), ref["dstep1.cache.v"].numpy(), rtol=1e-10, atol=1e-13)


def test_an_edited_gradient_passed_back_through_the_cache_is_named() -> None:
    doc = serialize.to_dict(tracer.trace_lesson("kvcache", backward=True))
    spec = next(n for n in doc["nodes"] if n["name"] == "dstep2.cache.k.later")
    spec["value"]["data"][0] += 0.5
    result = serialize.loads(seal(doc)).verify()
    assert result.wrong[0].node == "dstep2.cache.k.later" and result.wrong[0].ids == ("dstep2.cache.k.later[1,1]",)
    assert "dstep2.cache.k[1,1]" in result.by_id
