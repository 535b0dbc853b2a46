"""Every node of every lesson against an independent float64 reference (``tests/reference.py``).

Two checks per trace: *local* (each node recomputed from the recorded values
of its operands, tolerance a few roundings of that element's own magnitude)
for float32 and float64, and *chain* (every node recomputed from the leaves
alone) for float64.  The leaves themselves (weights, masks, constants) are
rebuilt here the way the book builds them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import tracer
from tests import reference
from tracer.record.inputs import tutorial as tutorial_inputs

SHAPES = [(1, 1), (1, 5), (2, 1), (3, 3), (6, 3), (7, 2), (10, 4), (16, 32), (33, 7), (64, 16), (64, 32)]
LESSON_CASES: list[tuple[str, int, int, dict[str, Any]]] = [
    ("trainable", 6, 3, {}),
    ("trainable", 7, 4, {"d_out": 3}),
    ("trainable", 5, 3, {"weights": "linear"}),
    ("trainable", 1, 2, {}),
    ("causal", 6, 3, {}),
    ("causal", 9, 5, {"d_out": 3}),
    ("causal", 1, 1, {}),
    ("multihead", 6, 3, {}),
    ("multihead", 5, 4, {"d_out": 4}),
    ("multihead", 2, 1, {"d_out": 6}),
]
LEAVES = {"input", "const"}


def _inputs(t: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 2.0, size=(t, d))


def _trace(lesson: str, t: int, d: int, dtype: str, options: dict[str, Any]) -> tracer.Trace:
    x = tutorial_inputs()[0] if (t, d) == (6, 3) else _inputs(t, d, seed=t * 100 + d)
    return tracer.trace_lesson(lesson, inputs=x, query=1, dtype=dtype, **options)


def _agree(name: str, got: np.ndarray, want: np.ndarray, tol: np.ndarray, dtype: str) -> None:
    """Element by element within ``tol``; inf where the dtype overflows, NaN where the reference has NaN."""
    big = np.finfo(np.float32 if dtype == "float32" else np.float64).max
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.where(np.abs(want) > big, np.sign(want) * np.inf, want)
        ok = (np.isnan(got) & np.isnan(want)) | (np.isinf(got) & (got == want)) | (np.abs(got - want) <= tol)
    assert got.shape == want.shape, name
    bad = np.argwhere(~ok)
    assert not bad.size, f"{name}{tuple(bad[0] + 1)}: got {got[tuple(bad[0])]!r}, want {want[tuple(bad[0])]!r}"


def check_local(trace: tracer.Trace, lesson: str) -> set[str]:
    """Each node from its recorded operands: a few roundings of each element's own magnitude."""
    recorded = {n.name: n.value for n in trace.nodes}
    ref = reference.LESSONS[lesson](recorded, local=True)
    eps = np.finfo(np.float32 if trace.dtype == "float32" else np.float64)
    checked = set()
    for node in trace.nodes:
        if node.op in LEAVES:
            continue
        assert str(node.value.dtype) == trace.dtype, node.name
        with np.errstate(invalid="ignore"):
            tol = ref.depth[node.name] * eps.eps * ref.mag[node.name] + 4 * eps.tiny
        _agree(node.name, node.value.astype(np.float64), ref.value[node.name], tol, trace.dtype)
        checked.add(node.name)
    assert checked == set(ref.value), f"nodes without a reference: {checked ^ set(ref.value)}"
    return checked


def check_chain(trace: tracer.Trace, lesson: str) -> None:
    """Every node from the leaves alone, in float64: agreement to 1e-9 of each element's magnitude."""
    leaves = {n.name: n.value for n in trace.nodes if n.op in LEAVES}
    ref = reference.LESSONS[lesson](leaves)
    for node in trace.nodes:
        if node.op not in LEAVES:
            tol = 1e-9 * (ref.mag[node.name] + np.abs(np.nan_to_num(ref.value[node.name]))) + 1e-300
            _agree(node.name, node.value.astype(np.float64), ref.value[node.name], tol, "float64")


@pytest.mark.parametrize(("t", "d"), SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_simple_every_node(t: int, d: int, dtype: str) -> None:
    trace = tracer.trace_self_attention(_inputs(t, d, seed=t * 100 + d), query=1, dtype=dtype)
    checked = check_local(trace, "simple")
    assert {"omega.p", "omega.s", "stable.exp", "stable.sum.s", "z.t", "mat.z", "check.z"} <= checked
    if dtype == "float64":
        check_chain(trace, "simple")


@pytest.mark.parametrize(("lesson", "t", "d", "options"), LESSON_CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lesson_every_node(lesson: str, t: int, d: int, options: dict[str, Any], dtype: str) -> None:
    trace = _trace(lesson, t, d, dtype, options)
    check_local(trace, lesson)
    if dtype == "float64":
        check_chain(trace, lesson)


def _book_linear(d_in: int, d_out: int, seed: int, count: int, extra_out: bool = False) -> list[torch.nn.Linear]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = [torch.nn.Linear(d_in, d_out, bias=False) for _ in range(count)]
        if extra_out:
            layers.append(torch.nn.Linear(d_out, d_out))
    return layers


def _leaf(trace: tracer.Trace, name: str) -> np.ndarray:
    return trace.tensor(name).astype(np.float64)


@pytest.mark.parametrize(("lesson", "t", "d", "options"), LESSON_CASES)
def test_leaves_are_built_as_the_book_builds_them(lesson: str, t: int, d: int, options: dict[str, Any]) -> None:
    trace = _trace(lesson, t, d, "float64", options)
    d_out = int(options.get("d_out", 2))
    names = ("W_query", "W_key", "W_value")
    f32 = np.float32
    if lesson == "trainable" and options.get("weights") != "linear":
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(123)
            drawn = [torch.rand(d, d_out) for _ in names]
        for name, w in zip(names, drawn, strict=True):
            np.testing.assert_array_equal(_leaf(trace, name), w.numpy().astype(f32))
    if lesson == "causal" or options.get("weights") == "linear":
        for name, layer in zip(names, _book_linear(d, d_out, 789, 3), strict=True):
            np.testing.assert_array_equal(_leaf(trace, name), layer.weight.detach().numpy().T)
    if lesson == "causal":
        for name, layer in zip(names, _book_linear(d, d_out, 123, 3), strict=True):
            np.testing.assert_array_equal(_leaf(trace, f"batch.{name}"), layer.weight.detach().numpy().T)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(123)
            kept = torch.nn.Dropout(0.5)(torch.ones(t, t)).numpy() != 0
        np.testing.assert_array_equal(_leaf(trace, "dropout.keep"), kept)
        assert trace["dropout.scale"].value == 2.0
        assert trace["batch.sqrt_dk"].value == np.sqrt(d_out)
        np.testing.assert_array_equal(_leaf(trace, "batch.x"), np.stack([_leaf(trace, "x")] * 2))
    if lesson == "multihead":
        heads = _book_linear(d, d_out, 123, 6)
        for n, name in enumerate(names):
            for h in range(2):
                want = heads[3 * h + n].weight.detach().numpy().T
                np.testing.assert_array_equal(_leaf(trace, f"wrap.{name}")[h], want)
        *split, out = _book_linear(d, d_out, 123, 3, extra_out=True)
        for name, layer in zip(names, split, strict=True):
            np.testing.assert_array_equal(_leaf(trace, f"split.{name}"), layer.weight.detach().numpy().T)
        np.testing.assert_array_equal(_leaf(trace, "split.W_out"), out.weight.detach().numpy().T)
        np.testing.assert_array_equal(_leaf(trace, "split.b_out"), out.bias.detach().numpy())
        assert trace["wrap.sqrt_dk"].value == np.sqrt(d_out)
        assert trace["split.sqrt_dk"].value == np.sqrt(d_out // 2)
    if lesson in ("causal", "multihead"):
        np.testing.assert_array_equal(_leaf(trace, "mask.tril"), np.tril(np.ones((t, t))))
        np.testing.assert_array_equal(_leaf(trace, "mask.triu"), np.triu(np.ones((t, t)), k=1))
    if lesson in ("trainable", "causal"):
        assert trace["sqrt_dk"].value == np.sqrt(d_out)


def test_float32_tolerance_is_per_element() -> None:
    """A weight near 0.016 must be checked to its own few ulps, not to the node's largest value."""
    trace = tracer.trace_lesson("causal")
    ref = reference.causal({n.name: n.value for n in trace.nodes}, local=True)
    alpha = trace.tensor("causal.alpha").astype(np.float64)
    tol = ref.depth["causal.alpha"] * np.finfo(np.float32).eps * ref.mag["causal.alpha"]
    small = (alpha > 0) & (alpha < 0.2)
    assert small.any() and (tol[small] < 1e-7).all()
    # so a slip of 1e-6 in a small weight is caught (a node-wide scale allowed ~4e-4)
    with pytest.raises(AssertionError):
        _agree("causal.alpha", alpha + small * 1e-6, ref.value["causal.alpha"], tol, "float32")


@pytest.mark.parametrize(("t", "d"), [(1, 1), (6, 3), (64, 32)])
def test_loop_form_equals_matrix_form(t: int, d: int) -> None:
    trace = tracer.trace_self_attention(_inputs(t, d, seed=7), query=1)
    for name in ("check.omega", "check.alpha", "check.z", "check.naive", "check.torch"):
        assert trace[name].value <= 1e-5 * max(1.0, float(np.abs(trace.tensor("omega")).max())), name


def test_running_sums_are_left_to_right_in_the_dtype() -> None:
    """Partial sums are the tutorial's `res += a * b`, one float32 addition at a time."""
    trace = tracer.trace_self_attention(_inputs(9, 11, seed=3))
    p, s = trace.tensor("omega.p"), trace.tensor("omega.s")
    acc = np.zeros(p.shape[:2], dtype=np.float32)
    for k in range(p.shape[2]):
        acc = (acc + p[:, :, k]).astype(np.float32)
        assert np.array_equal(acc, s[:, :, k])
    assert np.array_equal(trace.tensor("omega"), s[:, :, -1])
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
    check_local(trace, "simple")
    ref = reference.simple({"x": trace.tensor("x")})
    np.testing.assert_allclose(trace.tensor("alpha"), ref.value["alpha"], rtol=1e-5, atol=1e-7)
    assert trace["check.torch"].value < 1e-6
