"""Every stage of the simple lesson against an independent float64 reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tracer
from tests import reference
from tracer.core import portable
from tracer.record.inputs import tutorial as tutorial_inputs

SHAPES = [(1, 1), (1, 5), (2, 1), (3, 3), (6, 3), (7, 2), (10, 4), (16, 32), (33, 7), (64, 16), (64, 32)]


def _inputs(t: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 2.0, size=(t, d))


def _tolerance(ref: np.ndarray, dtype: str, depth: int) -> np.ndarray:
    """Error bound for a value reached through ``depth`` float roundings of magnitude ~|ref|."""
    eps = np.finfo(np.float32 if dtype == "float32" else np.float64).eps
    return depth * eps * (np.abs(ref) + 1.0) * 4


@pytest.mark.parametrize(("t", "d"), SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_node_matches_reference(t: int, d: int, dtype: str) -> None:
    x = _inputs(t, d, seed=t * 100 + d)
    trace = tracer.trace_self_attention(x, query=1, dtype=dtype)
    # the reference starts from the same (rounded) inputs the pipeline saw
    ref = reference.simple(trace.tensor("x").astype(np.float64))
    checked = set()
    depth = 4 * (d + t) + 16  # generous: a running sum of n terms accumulates n roundings
    for node in trace.nodes:
        if node.name.startswith("check."):
            continue
        want = ref[node.name]
        got = node.value.astype(np.float64)
        assert got.shape == want.shape, node.name
        assert str(node.value.dtype) == dtype, node.name
        scale = np.abs(want).max() if want.size else 1.0
        tol = _tolerance(np.broadcast_to(scale, want.shape), dtype, depth)
        bad = np.abs(got - want) > tol
        assert not bad.any(), f"{node.name}: max error {np.abs(got - want).max()} at {np.argwhere(bad)[0]}"
        checked.add(node.name)
    assert {"omega.p", "omega.s", "omega", "alpha", "z.t", "z.s", "z", "mat.z"} <= checked


@pytest.mark.parametrize(("t", "d"), [(1, 1), (6, 3), (64, 32)])
def test_loop_form_equals_matrix_form(t: int, d: int) -> None:
    trace = tracer.trace_self_attention(_inputs(t, d, seed=7), query=1)
    for name in ("check.omega", "check.alpha", "check.z", "check.naive", "check.torch"):
        assert trace[name].value <= 1e-5 * max(1.0, float(np.abs(trace.tensor("omega")).max())), name
        assert portable.within(trace.node(name)), name  # this machine's BLAS and softmax keep to the bounds
    # and the recorded checks are what they claim to be
    for stem in ("omega", "alpha", "z"):
        diff = np.abs(trace.tensor(f"mat.{stem}") - trace.tensor(stem)).max()
        assert trace[f"check.{stem}"].value == pytest.approx(float(diff), abs=0)


def test_running_sums_are_left_to_right_in_the_dtype() -> None:
    """Partial sums are the tutorial's `res += a * b`, one float32 addition at a time."""
    trace = tracer.trace_self_attention(_inputs(9, 11, seed=3))
    p, s = trace.tensor("omega.p"), trace.tensor("omega.s")
    acc = np.zeros(p.shape[:2], dtype=np.float32)
    for k in range(p.shape[2]):
        acc = (acc + p[:, :, k]).astype(np.float32)
        assert np.array_equal(acc, s[:, :, k])
    assert np.array_equal(trace.tensor("omega"), s[:, :, -1])
    # products are single float32 multiplications of the inputs
    x = trace.tensor("x")
    assert np.array_equal(p, x[:, None, :] * x[None, :, :])


def test_torch_softmax_is_the_library_call() -> None:
    trace = tracer.trace_self_attention(_inputs(5, 4, seed=1))
    omega = torch.from_numpy(trace.tensor("omega").copy())
    assert np.array_equal(trace.tensor("torch.alpha"), torch.softmax(omega, dim=1).numpy())


def test_overflow_is_recorded_not_raised() -> None:
    """Scaled inputs overflow the naive exp in float32; the stable softmax stays right."""
    inputs = np.array(tutorial_inputs()[0]) * 10.0
    trace = tracer.trace_self_attention(inputs)
    inf, nan = trace.node("naive.exp").nonfinite()
    assert inf > 0 and nan == 0
    assert np.isnan(trace.tensor("naive.alpha")).any()
    assert np.isnan(trace["check.naive"].value)
    flagged = {name for name, _, _ in trace.nonfinite()}
    assert {"naive.exp", "naive.sum", "naive.alpha"} <= flagged
    assert "alpha" not in flagged and "z" not in flagged
    ref = reference.simple(trace.tensor("x").astype(np.float64))
    np.testing.assert_allclose(trace.tensor("alpha"), ref["alpha"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(trace.tensor("torch.alpha"), ref["alpha"], rtol=1e-5, atol=1e-7)
    assert trace["check.torch"].value < 1e-6
