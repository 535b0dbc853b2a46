"""The backward pass of every lesson that has one, against plain torch autograd and finite differences.

The reference here is written from the maths, in plain torch, and shares
nothing with the recorder: the trace's inputs (x, the weights, the dropout
mask) go in, ``torch.autograd`` gives the gradients.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tracer
from tracer.errors import InputError

LESSONS = ("simple", "trainable", "causal", "window", "gqa", "rope", "multihead", "kvcache")


def reference(lesson: str, t: tracer.Trace, dtype: torch.dtype, upstream: torch.Tensor | None = None) -> dict:
    """The lesson's output and the gradients of L = ½ Σ z² (or Σ z ⊙ upstream) by autograd."""
    leaves = {"x": torch.tensor(np.asarray(t["x"].node.value), dtype=dtype, requires_grad=True)}
    x = leaves["x"]
    if lesson in ("gqa", "multihead"):
        return grouped(t, leaves, dtype, upstream, "split." if lesson == "multihead" else "")
    if lesson == "simple":
        p = torch.softmax(x @ x.T, dim=-1)
        z = p @ x
    else:
        for name in ("W_query", "W_key", "W_value"):
            leaves[name] = torch.tensor(np.asarray(t[name].node.value), dtype=dtype, requires_grad=True)
        q, k, v = (x @ leaves[n] for n in ("W_query", "W_key", "W_value"))
        if lesson == "rope":
            q, k = rotated(q, t), rotated(k, t)
        s = q @ k.T
        n = s.shape[0]
        if lesson in ("causal", "rope", "kvcache"):  # kvcache: generation with a cache is causal attention
            s = s.masked_fill(torch.ones(n, n).triu(1).bool(), -math.inf)
        if lesson == "window":  # key j seen by query i when i - w < j <= i
            i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
            s = s.masked_fill((j > i) | (j <= i - t.meta["window"]), -math.inf)
        p = torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1)
        if lesson == "causal":
            keep = torch.tensor(np.asarray(t["dropout.keep"].node.value), dtype=dtype)
            p = p * keep * 2.0
        z = p @ v
    loss = 0.5 * (z * z).sum() if upstream is None else (z * upstream.to(dtype)).sum()
    loss.backward()
    return {f"d{name}": leaf.grad for name, leaf in leaves.items()} | {"z": z.detach()}


def rotated(vec: torch.Tensor, t: tracer.Trace) -> torch.Tensor:
    """RoPE as model code writes it: token m's pair p turned by m·base^(−2(p−1)/d), in the trace's convention."""
    rope = t.meta["rope"]
    n, d = vec.shape
    theta = rope["base"] ** (-torch.arange(0, d, 2, dtype=vec.dtype) / d)
    angle = torch.arange(n, dtype=vec.dtype)[:, None] * theta[None, :]
    cos, sin = torch.cos(angle), torch.sin(angle)
    if rope["style"] == "half":  # rotate_half: (x, y) = (first half, second half)
        x, y = vec[:, : d // 2], vec[:, d // 2 :]
        return torch.cat((x * cos - y * sin, y * cos + x * sin), dim=1)
    x, y = vec[:, 0::2], vec[:, 1::2]
    return torch.stack((x * cos - y * sin, y * cos + x * sin), dim=2).reshape(n, d)


def grouped(t: tracer.Trace, leaves: dict, dtype: torch.dtype, upstream: torch.Tensor | None, pre: str = "") -> dict:
    """Grouped-query (or, with as many groups as heads, multi-head) attention as a module computes it: views,
    transposes, ``repeat_interleave``, the causal mask, the output projection (and its bias when ``pre``)."""
    names = ("W_query", "W_key", "W_value", "W_out", *(("b_out",) if pre else ()))
    for name in names:
        leaves[pre + name] = torch.tensor(np.asarray(t[pre + name].node.value), dtype=dtype, requires_grad=True)
    x, w = leaves["x"], {name: leaves[pre + name] for name in names}
    heads = t.meta["heads"]
    groups = t.meta.get("groups", heads)
    b, n, _ = x.shape
    q = (x @ w["W_query"]).view(b, n, heads, -1).transpose(1, 2)
    k = (x @ w["W_key"]).view(b, n, groups, -1).transpose(1, 2).repeat_interleave(heads // groups, dim=1)
    v = (x @ w["W_value"]).view(b, n, groups, -1).transpose(1, 2).repeat_interleave(heads // groups, dim=1)
    s = (q @ k.transpose(2, 3)).masked_fill(torch.ones(n, n).triu(1).bool(), -math.inf)
    z = torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1) @ v
    out = z.transpose(1, 2).reshape(b, n, -1) @ w["W_out"]
    if pre:
        out = out + w["b_out"]
    loss = 0.5 * (out * out).sum() if upstream is None else (out * upstream.to(dtype)).sum()
    if pre:  # lesson multihead: its wrapper of heads adds its own term ½ Σ concat² (the same inputs, its own weights)
        loss = loss + 0.5 * (wrapper(t, leaves, dtype) ** 2).sum()
    loss.backward()
    return {f"d{name}": leaf.grad for name, leaf in leaves.items()} | {"out": out.detach(), f"{pre}out": out.detach()}


def wrapper(t: tracer.Trace, leaves: dict, dtype: torch.dtype) -> torch.Tensor:
    """Lesson multihead's wrapper as the book writes it: one causal head per stacked weight, outputs side by side."""
    for name in ("W_query", "W_key", "W_value"):
        leaves[f"wrap.{name}"] = torch.tensor(values(t, f"wrap.{name}"), dtype=dtype, requires_grad=True)
    x = leaves["x"]
    n = x.shape[1]
    heads = []
    for h in range(leaves["wrap.W_query"].shape[0]):
        q, k, v = (x @ leaves[f"wrap.{name}"][h] for name in ("W_query", "W_key", "W_value"))
        s = (q @ k.transpose(1, 2)).masked_fill(torch.ones(n, n).triu(1).bool(), -math.inf)
        heads.append(torch.softmax(s / math.sqrt(k.shape[-1]), dim=-1) @ v)
    return torch.cat(heads, dim=-1)


def values(t: tracer.Trace, name: str) -> np.ndarray:
    return np.asarray(t[name].node.value)


@pytest.mark.parametrize("lesson", LESSONS)
def test_metadata_ids_and_verify(lesson: str) -> None:
    t = tracer.trace_lesson(lesson, backward=True)
    back = t.meta["backward"]
    out, up = back["output"], back["upstream"]
    assert up == f"d{out}" and back["loss"] == "half_square"
    np.testing.assert_array_equal(values(t, up), values(t, out))  # dL/dz = z for L = ½ Σ z²
    assert back["gradients"][-1] == "dx"
    weights = {f"d{'split.' if lesson == 'multihead' else ''}W_{n}" for n in ("query", "key", "value")}
    assert weights <= set(back["gradients"]) or lesson == "simple"
    assert t[f"dx[{'1,' if lesson in ('gqa', 'multihead') else ''}3,2]"].stage == "dinputs"
    assert t.verify().ok
    assert set(back["stages"]) <= set(t.stages)


@pytest.mark.parametrize("lesson", LESSONS)
def test_float64_matches_autograd(lesson: str) -> None:
    t = tracer.trace_lesson(lesson, backward=True, dtype="float64")
    ref = reference(lesson, t, torch.float64)
    out = t.meta["backward"]["output"]
    np.testing.assert_allclose(values(t, out), ref.get(out, ref.get("z")).numpy(), rtol=1e-12, atol=1e-14)
    for grad in t.meta["backward"]["gradients"]:
        np.testing.assert_allclose(values(t, grad), ref[grad].numpy(), rtol=1e-10, atol=1e-13, err_msg=grad)


@pytest.mark.parametrize("lesson", LESSONS)
def test_float32_within_bound_of_autograd(lesson: str) -> None:
    """Float32 gradients against float64 autograd: every entry within a few float32 ulps of its scale."""
    t = tracer.trace_lesson(lesson, backward=True)
    ref = reference(lesson, t, torch.float64, torch.tensor(values(t, t.meta["backward"]["upstream"])))
    for grad in t.meta["backward"]["gradients"]:
        want = ref[grad].numpy()
        scale = np.abs(want).max()
        assert np.abs(values(t, grad) - want).max() <= 64 * np.finfo(np.float32).eps * scale, grad


def _loss(lesson: str, inputs: np.ndarray) -> float:
    """½ Σ z² of the forward trace (causal's output exists only with a backward pass: traced with one)."""
    t = tracer.trace_lesson(lesson, inputs=inputs, dtype="float64", backward=lesson == "causal")
    name = {"causal": "dropout.z", "gqa": "out", "multihead": "split.out", "kvcache": "gen.z"}.get(lesson, "z")
    more = 0.5 * float((values(t, "wrap.concat") ** 2).sum()) if lesson == "multihead" else 0.0  # its wrapper's term
    return 0.5 * float((values(t, name) ** 2).sum()) + more


@pytest.mark.parametrize("lesson", LESSONS)
def test_float64_agrees_with_finite_differences_of_the_forward(lesson: str) -> None:
    t = tracer.trace_lesson(lesson, backward=True, dtype="float64")
    x = values(t, "x").astype(np.float64)
    dx = values(t, "dx")
    if lesson in ("gqa", "multihead"):  # the batch holds two copies of the inputs: a change to one token moves both
        x, dx = x[0], dx[0] + dx[1]
    h = 1e-6
    for i, k in ((0, 0), (1, 2), (2, 1), (5, 2)):
        up, down = x.copy(), x.copy()
        up[i, k] += h
        down[i, k] -= h
        fd = (_loss(lesson, up) - _loss(lesson, down)) / (2 * h)
        assert abs(fd - dx[i, k]) <= 1e-6 * max(abs(dx[i, k]), 1e-3), (i, k, fd, dx[i, k])


def test_given_upstream_gradient() -> None:
    g = np.arange(12, dtype=np.float64).reshape(6, 2) / 7
    t = tracer.trace_lesson("trainable", grad_output=g, dtype="float64")
    assert t.meta["backward"]["loss"] == "given"
    np.testing.assert_array_equal(values(t, "dz"), g)
    ref = reference("trainable", t, torch.float64, torch.tensor(g))
    np.testing.assert_allclose(values(t, "dW_key"), ref["dW_key"].numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize(
    ("given", "words"),
    [
        (np.ones((2, 2)), "shape 2 x 2; the output z has shape 6 x 2"),
        ([[1.0, float("nan")]] * 6, "the value at [1, 2] is nan: it must be finite"),
        ("abc", "nested lists of numbers or an array, got str"),
        ([[1.0, 2.0], [3.0]], "every row as long as the others"),
        ([], "is empty"),
        (np.array([["a", "b"]]), "must be numbers"),
    ],
)
def test_bad_upstream_gradient_is_one_clear_error(given: object, words: str) -> None:
    with pytest.raises(InputError) as e:
        tracer.trace_lesson("trainable", grad_output=given)
    assert str(e.value).startswith("the upstream gradient ") and words in str(e.value)


def test_a_lesson_without_a_backward_pass_says_so() -> None:
    with pytest.raises(InputError, match="has no backward pass yet"):
        tracer.trace_lesson("model", backward=True)


def test_keys_outside_the_window_get_exactly_zero() -> None:
    t = tracer.trace_lesson("window", backward=True, window=2)
    d = values(t, "domega")
    hidden = values(t, "mask.hide") != 0
    assert (d[hidden] == 0).all() and not np.signbit(d[hidden]).any()
    assert hidden[3, 0] and hidden[0, 3] and (d[~hidden] != 0).any()


def test_masked_and_dropped_gradients_are_exactly_zero() -> None:
    t = tracer.trace_lesson("causal", backward=True)
    d = values(t, "domega")
    hidden = np.triu(np.ones_like(d), 1) != 0
    assert (d[hidden] == 0).all() and not np.signbit(d[hidden]).any()  # +0, from masked_fill's backward
    assert (d[~hidden] != 0).any()
    dropped = values(t, "dropout.keep") == 0
    assert (values(t, "dcausal.alpha")[dropped] == 0).all()
    np.testing.assert_array_equal(values(t, "ddropout.kept"), values(t, "ddropout.alpha") * np.float32(2.0))


def test_row_sum_term_is_its_own_step() -> None:
    t = tracer.trace_lesson("simple", backward=True, dtype="float64")
    alpha, dalpha = values(t, "alpha"), values(t, "dalpha")
    rho = values(t, "domega.dot")
    np.testing.assert_allclose(rho, (alpha * dalpha).sum(axis=1), rtol=1e-14)
    np.testing.assert_array_equal(values(t, "domega"), alpha * (dalpha - rho[:, None]))
    assert t["domega.dot[2].p[3]"].inputs == ("alpha[2,3]", "dalpha[2,3]")


def test_simple_sums_three_paths() -> None:
    t = tracer.trace_lesson("simple", backward=True)
    paths = [values(t, f"dx.{p}") for p in ("query", "key", "value")]
    np.testing.assert_array_equal(values(t, "dx"), (paths[0] + paths[1]) + paths[2])
    assert t["dx[3,2]"].inputs == ("dx.query_key[3,2]", "dx.value[3,2]")


def test_float32_elementwise_steps_bit_identical_to_torch() -> None:
    """Where torch computes the same one operation per entry, the bits are the same."""
    t = tracer.trace_lesson("trainable", backward=True)
    dscaled = torch.tensor(values(t, "dscaled"), requires_grad=False)
    omega = torch.tensor(values(t, "omega"), requires_grad=True)
    root = torch.tensor(values(t, "sqrt_dk"))
    (omega / root).backward(dscaled)
    np.testing.assert_array_equal(values(t, "domega"), omega.grad.numpy())


@pytest.mark.parametrize("lesson", LESSONS)
def test_backward_is_opt_in_and_leaves_the_forward_alone(lesson: str) -> None:
    plain = tracer.trace_lesson(lesson)
    both = tracer.trace_lesson(lesson, backward=True)
    assert "backward" not in plain.meta
    assert {k: v for k, v in both.meta.items() if k != "backward"} == plain.meta
    assert len(both.nodes) > len(plain.nodes)
    for a, b in zip(plain.nodes, both.nodes, strict=False):
        assert (a.name, a.stage) == (b.name, b.stage)
        np.testing.assert_array_equal(a.value, b.value)


def test_float32_dropout_and_mask_steps_bit_identical_to_torch() -> None:
    """Dropout's and masked_fill's backward in torch are one operation per entry too: the same bits."""
    t = tracer.trace_lesson("causal", backward=True)
    causal = torch.tensor(values(t, "causal.alpha"), requires_grad=True)
    keep = torch.tensor(values(t, "dropout.keep"))
    scale = torch.tensor(values(t, "dropout.scale"))
    ((causal * keep) * scale).backward(torch.tensor(values(t, "ddropout.alpha")))
    np.testing.assert_array_equal(values(t, "dcausal.alpha"), causal.grad.numpy())
    neg = torch.tensor(values(t, "omega"), requires_grad=True)
    hidden = torch.tensor(values(t, "mask.triu")) != 0
    neg.masked_fill(hidden, -math.inf).backward(torch.tensor(values(t, "dneg.omega")))
    np.testing.assert_array_equal(values(t, "domega"), neg.grad.numpy())


def test_float32_sums_within_the_bound_of_torchs_matrix_products() -> None:
    """torch's matrix products sum in the library's order, so the bits may differ; never by more than the bound.

    Both are sums of n products in float32: each is within γ_n Σ|a_i b_i|
    of the exact sum (γ_n = n u / (1 − n u), u = 2⁻²⁴), so they are within
    2 γ_n Σ|a_i b_i| of each other.
    """
    t = tracer.trace_lesson("trainable", backward=True)
    dz, v, alpha = (torch.tensor(values(t, n)) for n in ("dz", "v", "alpha"))
    u = 2.0**-24

    def bound(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
        n = a.shape[-1]
        gamma = n * u / (1 - n * u)
        return 2 * gamma * (a.double().abs() @ b.double().abs()).numpy()

    for name, got, a, b in (("dalpha", dz @ v.T, dz, v.T), ("dv", alpha.T @ dz, alpha.T, dz)):
        gap = np.abs(values(t, name).astype(np.float64) - got.double().numpy())
        assert (gap <= bound(a, b)).all(), name


def test_trace_self_attention_takes_the_backward_options() -> None:
    t = tracer.trace_self_attention(backward=True)
    assert t.meta["backward"]["upstream"] == "dz"
    g = np.full((6, 3), 0.25)
    given = tracer.trace_self_attention(grad_output=g)
    np.testing.assert_array_equal(values(given, "dz"), g.astype(np.float32))
    assert "backward" not in tracer.trace_self_attention().meta


def test_a_three_axis_upstream_gradient_for_gqa() -> None:
    g = np.linspace(-1, 1, 2 * 6 * 8).reshape(2, 6, 8)
    t = tracer.trace_lesson("gqa", grad_output=g, dtype="float64")
    np.testing.assert_array_equal(values(t, "dout"), g)
    ref = reference("gqa", t, torch.float64, torch.tensor(g))
    np.testing.assert_allclose(values(t, "dx"), ref["dx"].numpy(), rtol=1e-10, atol=1e-13)
    with pytest.raises(InputError, match="has shape 6 x 8; the output out has shape 2 x 6 x 8"):
        tracer.trace_lesson("gqa", grad_output=g[0])


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_rope_gradient_is_the_rotation_transposed(style: str) -> None:
    t = tracer.trace_lesson("rope", backward=True, style=style, dtype="float64")
    ref = reference("rope", t, torch.float64)
    for grad in t.meta["backward"]["gradients"]:
        np.testing.assert_allclose(values(t, grad), ref[grad].numpy(), rtol=1e-10, atol=1e-13, err_msg=grad)
    drq, dq = values(t, "drope.q"), values(t, "dq")
    assert np.allclose(np.linalg.norm(drq, axis=1), np.linalg.norm(dq, axis=1), rtol=1e-14)  # a rotation keeps lengths
    assert t["dq[1,1]"].node.op == "cat" and t["dq.rx[2,1]"].node.op == "add" and t["dq.ry[2,1]"].node.op == "sub"


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_a_shared_group_sums_its_heads(groups: int) -> None:
    t = tracer.trace_lesson("gqa", backward=True, groups=groups, dtype="float64")
    r = 4 // groups
    dkh, dhk = values(t, "dkh"), values(t, "dhk")
    for g in range(groups):
        want = dkh[g * r]
        for h in range(g * r + 1, (g + 1) * r):
            want = want + dkh[h]
        np.testing.assert_array_equal(dhk[g], want)
    ref = reference("gqa", t, torch.float64)
    for grad in t.meta["backward"]["gradients"]:
        np.testing.assert_allclose(values(t, grad), ref[grad].numpy(), rtol=1e-10, atol=1e-13, err_msg=grad)
