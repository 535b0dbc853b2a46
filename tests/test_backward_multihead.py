"""Lesson multihead's backward pass through both of its modules: the wrapper of heads and the split projections.

The references here are plain torch, written from the book's two modules:
autograd of each module alone gives its own weights' gradients and its own
share of x's; central finite differences of the lesson's forward trace (its
weights moved one entry at a time) check the wrapper's weights and x.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import tracer
from tests.hostile import seal
from tracer.core import serialize
from tracer.errors import TraceFormatError
from tracer.lessons.multihead import pipeline
from tracer.record.blocks.backward import Backward

INPUTS = np.asarray(tracer.trace_lesson("simple").tensor("x"), dtype=np.float64)


def values(t: tracer.Trace, name: str) -> np.ndarray:
    return np.asarray(t.tensor(name))


def wrapper_alone(t: tracer.Trace) -> dict[str, np.ndarray]:
    """Autograd of the wrapper by itself, L_wrap = ½ Σ out², in float64: x's and its weights' gradients.

    Its output is the heads side by side, projected by ``wrap.W_out`` plus ``wrap.b_out`` when it has them."""
    x = torch.tensor(values(t, "x"), requires_grad=True)
    names = (
        "W_query",
        "W_key",
        "W_value",
        *(("W_out", "b_out") if any(n.name == "wrap.W_out" for n in t.nodes) else ()),
    )
    w = {n: torch.tensor(values(t, f"wrap.{n}"), requires_grad=True) for n in names}
    n = x.shape[1]
    heads = []
    for h in range(w["W_query"].shape[0]):
        q, k, v = (x @ w[name][h] for name in ("W_query", "W_key", "W_value"))
        s = (q @ k.transpose(1, 2)).masked_fill(torch.ones(n, n).triu(1).bool(), -math.inf)
        heads.append(torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1) @ v)
    out = torch.cat(heads, dim=-1)
    if "W_out" in w:
        out = out @ w["W_out"] + w["b_out"]
    (0.5 * (out**2).sum()).backward()
    assert x.grad is not None
    return {"dx.wrap": x.grad.numpy(), **{f"dwrap.{k}": v.grad.numpy() for k, v in w.items() if v.grad is not None}}


def test_the_wrapper_and_the_split_form_each_get_their_own_modules_gradient() -> None:
    t = tracer.trace_lesson("multihead", backward=True, dtype="float64")
    back = t.meta["backward"]
    assert back["also"] == [{"output": "wrap.concat", "upstream": "dwrap.concat", "loss": "half_square"}]
    np.testing.assert_array_equal(values(t, "dwrap.concat"), values(t, "wrap.concat"))
    for name, want in wrapper_alone(t).items():
        np.testing.assert_allclose(values(t, name), want, rtol=1e-10, atol=1e-13, err_msg=name)
    np.testing.assert_array_equal(values(t, "dx"), values(t, "dx.wrap") + values(t, "dx.split"))
    assert t["dx[1,3,2]"].inputs == ("dx.wrap[1,3,2]", "dx.split[1,3,2]")
    assert t["dx.wrap.key[1,3,2]"].inputs == ("dx.wrap.key.per[1,1,3,2]", "dx.wrap.key.per[2,1,3,2]")
    assert t["dwrap.W_value[2,1,1]"].inputs == ("dwrap.W_value.per[2,1,1,1]", "dwrap.W_value.per[2,2,1,1]")


def test_a_wrapper_with_an_output_projection_and_three_heads_gets_its_gradients_too() -> None:
    """What the check builds for a student's wrapper with ``out_proj``: its bias and weight, then the heads."""
    x = torch.from_numpy(INPUTS)
    w = pipeline.with_heads(x, 6, 3)
    wrap = {k: v.to(torch.float64) for k, v in w["wrap"].items()}
    split = {k: v.to(torch.float64) for k, v in w["split"].items()}
    gen = torch.Generator().manual_seed(5)
    out = {
        "W_out": torch.randn(18, 5, generator=gen, dtype=torch.float64),
        "b_out": torch.randn(5, generator=gen, dtype=torch.float64),
    }
    t = pipeline.build(x, ["t"] * 6, 2, torch.float64, {}, wrap, split, 3, out, Backward())
    assert t.meta["backward"]["also"] == [{"output": "wrap.out", "upstream": "dwrap.out", "loss": "half_square"}]
    assert {"dwrap.b_out", "dwrap.W_out"} <= set(t.meta["backward"]["gradients"])
    for name, want in wrapper_alone(t).items():
        np.testing.assert_allclose(values(t, name), want, rtol=1e-10, atol=1e-13, err_msg=name)
    assert t.verify().ok


def test_every_wrapper_gradient_is_recorded_stage_by_stage_and_verified() -> None:
    t = tracer.trace_lesson("multihead", backward=True)
    stages = {n.name: n.stage for n in t.nodes}
    for name, stage in (
        ("dwrap.concat", "doutput"),
        ("dwrap.z", "dattention"),
        ("dwrap.causal.alpha", "dattention"),
        ("dwrap.v", "dattention"),
        ("dwrap.neg.scaled.dot", "dnormalize"),
        ("dwrap.neg.omega", "dscores"),
        ("dwrap.omega", "dscores"),
        ("dwrap.q", "dscores"),
        ("dwrap.k", "dscores"),
        ("dwrap.W_query", "dprojections"),
        ("dx.wrap", "dinputs"),
    ):
        assert stages[name] == stage, name
    d = values(t, "dwrap.omega")
    hidden = np.broadcast_to(np.triu(np.ones(d.shape[-2:]), 1) != 0, d.shape)
    assert (d[hidden] == 0).all() and (d[~hidden] != 0).any()  # a masked score gets exactly 0 in every head
    z = values(t, "dwrap.z")  # the concatenation undone: head h's columns of dwrap.concat
    np.testing.assert_array_equal(z[1], values(t, "dwrap.concat")[..., 2:])
    result = t.verify()
    assert result.ok and result.unchecked == ()


def _loss(split: dict[str, Any], wrap: dict[str, torch.Tensor], x: np.ndarray) -> float:
    """L = ½ Σ split.out² + ½ Σ wrap.concat² of the lesson's forward trace, on these weights."""
    t = pipeline.build(torch.from_numpy(x), ["t"] * len(x), 2, torch.float64, {}, wrap, split)
    return 0.5 * float((values(t, "split.out") ** 2).sum() + (values(t, "wrap.concat") ** 2).sum())


def test_float64_wrapper_weights_and_x_agree_with_central_finite_differences() -> None:
    drawn = pipeline.prepare(torch.from_numpy(INPUTS))
    split = {k: v.to(torch.float64) for k, v in drawn["split"].items()}
    wrap = {k: v.to(torch.float64) for k, v in drawn["wrap"].items()}
    t = pipeline.build(
        torch.from_numpy(INPUTS), ["t"] * len(INPUTS), 2, torch.float64, {}, wrap, split, backward_pass=Backward()
    )
    h = 1e-6
    for name, at in (("W_query", (1, 0, 1)), ("W_key", (0, 2, 0)), ("W_value", (1, 1, 1)), ("W_key", (1, 0, 0))):
        moved = []
        for step in (h, -h):
            w = {k: v.clone() for k, v in wrap.items()}
            w[name][at] += step
            moved.append(_loss(split, w, INPUTS))
        fd, got = (moved[0] - moved[1]) / (2 * h), float(values(t, f"dwrap.{name}")[at])
        assert abs(fd - got) <= 1e-6 * max(abs(got), 1e-3), (name, at, fd, got)
    dx = values(t, "dx")
    for i, k in ((0, 0), (2, 1), (5, 2)):
        up, down = INPUTS.copy(), INPUTS.copy()
        up[i, k] += h
        down[i, k] -= h
        fd = (_loss(split, wrap, up) - _loss(split, wrap, down)) / (2 * h)
        got = dx[0, i, k] + dx[1, i, k]  # the batch holds two copies of the inputs
        assert abs(fd - got) <= 1e-6 * max(abs(got), 1e-3), (i, k, fd, got)


def test_a_given_gradient_is_the_split_outputs_and_the_wrapper_keeps_its_half_square() -> None:
    g = np.linspace(-1, 1, 24).reshape(2, 6, 2)
    t = tracer.trace_lesson("multihead", grad_output=g, dtype="float64")
    assert t.meta["backward"]["loss"] == "given" and t.meta["backward"]["also"][0]["loss"] == "half_square"
    np.testing.assert_array_equal(values(t, "dsplit.out"), g)
    np.testing.assert_array_equal(values(t, "dwrap.concat"), values(t, "wrap.concat"))
    np.testing.assert_allclose(values(t, "dx.wrap"), wrapper_alone(t)["dx.wrap"], rtol=1e-10, atol=1e-13)


def test_an_edited_wrapper_gradient_is_named_by_verify() -> None:
    doc = serialize.to_dict(tracer.trace_lesson("multihead", backward=True))
    spec = next(n for n in doc["nodes"] if n["name"] == "dwrap.W_key")
    spec["value"]["data"][0] += 0.5
    result = serialize.loads(seal(doc)).verify()
    assert result.wrong[0].node == "dwrap.W_key" and result.wrong[0].ids == ("dwrap.W_key[1,1,1]",)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ({"upstream": "wrap.concat"}, "'wrap.concat' is computed"),
        ({"output": "nowhere"}, "'nowhere' is not a node of this trace"),
        ({"upstream": "dsplit.out"}, "the output 'wrap.concat' has axes"),
    ],
)
def test_a_broken_further_output_in_the_file_is_refused_in_one_line(edit: dict[str, str], words: str) -> None:
    doc = serialize.to_dict(tracer.trace_lesson("multihead", backward=True))
    doc["meta"]["backward"]["also"][0].update(edit)
    with pytest.raises(TraceFormatError, match=r"\$\.meta\.backward\.also\[0\]") as e:
        serialize.loads(seal(doc))
    assert words in str(e.value) and "\n" not in str(e.value)
