"""The bounds that replace BLAS residuals in print: they hold for any order, and they do not move."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import tracer
from tracer.core import bounds, exact, portable

U = bounds.unit("float32")


def loop_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-by-column sums in float32, left to right, as the loop form adds them."""
    out = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = np.float32(0)
            for k in range(a.shape[1]):
                s = np.float32(s + np.float32(a[i, k] * b[k, j]))
            out[i, j] = s
    return out


def other_orders(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """The same sums added right to left, in a random order, pairwise, and with fused multiply-adds."""
    n = a.shape[1]
    results = []
    for kind in ("reverse", "shuffle", "pairwise", "fma"):
        out = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
        for i in range(a.shape[0]):
            for j in range(b.shape[1]):
                terms = [np.float32(a[i, k] * b[k, j]) for k in range(n)]
                if kind == "reverse":
                    terms = terms[::-1]
                elif kind == "shuffle":
                    terms = [terms[k] for k in rng.permutation(n)]
                if kind == "pairwise":
                    while len(terms) > 1:
                        terms = [np.float32(sum(terms[m : m + 2], np.float32(0))) for m in range(0, len(terms), 2)]
                    out[i, j] = terms[0]
                elif kind == "fma":
                    s = np.float64(0)
                    for k in range(n):
                        s = np.float64(np.float32(s + np.float64(a[i, k]) * np.float64(b[k, j])))
                    out[i, j] = np.float32(s)
                else:
                    s = np.float32(0)
                    for t in terms:
                        s = np.float32(s + t)
                    out[i, j] = s
        results.append(out)
    return results


@pytest.mark.parametrize("n", [3, 17, 64])
def test_matmul_bound_holds_for_any_order(n: int) -> None:
    rng = np.random.default_rng(n)
    a = rng.normal(size=(5, n)).astype(np.float32)
    b = rng.normal(size=(n, 4)).astype(np.float32)
    loop = loop_dot(a, b)
    bound = bounds.matmul("ik,kj->ij", a, np.zeros(1), b, np.zeros(1), U)
    others = [*other_orders(a, b, rng), (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()]
    for other in others:
        assert np.all(np.abs(other.astype(np.float64) - loop) <= bound)
    # and the bound is not vacuous: within a few hundred units of the largest product sum
    assert np.max(bound) < 4 * n * U * np.max(np.abs(a) @ np.abs(b)) + 1e-30


def test_softmax_bound_covers_torch_and_a_sloppy_exp() -> None:
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(6, 9)) * 4).astype(np.float32)
    # the loop form: max, shift, correctly rounded exp, sums left to right, division (as the recorder does)
    m = x.max(axis=1, keepdims=True)
    shift = (x - m).astype(np.float32)
    e = exact.exp(shift)
    s = np.cumsum(e, axis=1, dtype=np.float32)[:, -1:]
    loop = (e / s).astype(np.float32)
    bound = bounds.softmax(loop, x, np.zeros(1), 1, U)
    lib = torch.softmax(torch.from_numpy(x), dim=1).numpy()
    assert np.all(np.abs(lib.astype(np.float64) - loop) <= bound)
    # an exp off by up to 20 units in the last place, summed backwards, divided via a reciprocal
    noise = rng.integers(-20, 21, size=e.shape).astype(np.int32)
    sloppy = (e.view(np.int32) + noise).view(np.float32)
    total = np.float32(0) + sloppy[:, ::-1].cumsum(axis=1, dtype=np.float32)[:, -1:]
    other = sloppy * (np.float32(1) / total)
    assert np.all(np.abs(other.astype(np.float64) - loop) <= bound)


def test_softmax_bound_grows_with_the_inputs_error() -> None:
    c = np.array([[0.2, 0.3, 0.5]])
    x = np.array([[0.1, 0.5, 1.0]])
    tight = bounds.softmax(c, x, np.zeros(1), 1, U)
    loose = bounds.softmax(c, x, np.full((1, 3), 1e-4), 1, U)
    assert np.all(loose > tight) and np.all(loose < 1e-3)


def test_masked_entries_have_no_error() -> None:
    c = np.array([[1.0, 0.0], [0.4, 0.6]])
    x = np.array([[0.3, -np.inf], [0.1, 0.5]])
    b = bounds.softmax(c, x, np.zeros(1), 1, U)
    assert b[0, 1] == 0 and b[0, 0] > 0 and np.all(b[1] > 0)


@pytest.mark.parametrize(
    ("value", "shown"), [(1.23e-7, 1.3e-7), (1.2e-7, 1.2e-7), (9.91e-7, 1e-6), (5.0e-7, 5.0e-7), (0.0, 0.0)]
)
def test_shown_rounds_up_to_two_digits(value: float, shown: float) -> None:
    got = bounds.shown(value)
    assert got >= value and got == shown


def test_bounded_checks_print_their_bound(tutorial: tracer.Trace) -> None:
    node = tutorial.node("check.omega")
    bound = portable.bound(node)
    assert bound is not None and float(node.value) <= bound
    assert portable.check_text(node) == f"≤ {bound:.1e}"
    assert portable.check_text(tutorial.node("check.naive")) == f"{float(tutorial.node('check.naive').value):.2e}"
    broken = dataclasses.replace(node, value=np.array(1.0, dtype=np.float32))
    assert portable.check_text(broken) == f"1.0000 > {bound:.1e}" and not portable.within(broken)  # fixed from 0.01 up


def test_shown_trace_prints_loop_forms(tutorial: tracer.Trace) -> None:
    shown = portable.shown(tutorial)
    assert portable.loop_forms(tutorial) == {
        "torch.alpha": "alpha",
        "mat.omega": "omega",
        "mat.alpha": "alpha",
        "mat.z": "z",
    }
    assert np.array_equal(shown.tensor("mat.omega"), tutorial.tensor("omega"))
    assert np.array_equal(shown.tensor("torch.alpha_sum"), tutorial.tensor("alpha_sum"))
    assert np.array_equal(tutorial.tensor("mat.z"), tutorial.tensor("mat.z"))  # the original keeps the library's
    canon = portable.canonical(tutorial)
    assert float(canon.node("check.z").value) == np.float32(portable.bound(tutorial.node("check.z")))


def test_softmax_bound_never_exceeds_one_and_is_never_nan() -> None:
    # inputs so far apart that the estimate's exponentials overflow: two weights in [0, 1] differ by at most 1
    x = np.array([[0.0, 3.0e7, -3.0e7, 1.0]])
    c = np.array([[0.0, 1.0, 0.0, 0.0]])
    for e in (0.0, 1.0, 1e6):
        got = bounds.softmax(c, x, np.full(x.shape, e), -1, bounds.unit("float32"))
        assert np.isfinite(got).all() and (got >= 0).all() and (got <= 1).all()
    masked = np.array([[0.0, -np.inf]])
    got = bounds.softmax(np.array([[1.0, 0.0]]), masked, np.zeros((1, 2)), -1, bounds.unit("float32"))
    assert got[0, 1] == 0.0  # a masked entry is exactly 0 in both forms


def _matmul_every_term(spec: str, a: np.ndarray, ea: np.ndarray, b: np.ndarray, eb: np.ndarray, u: float) -> np.ndarray:
    """The bound's formula with all five sums computed, zero operands included (the slow, literal way)."""
    n = a.shape[-1]  # the summed axis is the last of ``a`` in the specs used here
    aa, bb = np.abs(a), np.abs(b)
    ea, eb = np.broadcast_to(ea, aa.shape), np.broadcast_to(eb, bb.shape)
    c = bounds.contract
    moved = c(spec, aa, eb) + c(spec, ea, bb) + c(spec, ea, eb)
    return moved + bounds.gamma(n, u) * (c(spec, aa + ea, bb + eb) + c(spec, aa, bb))


@pytest.mark.parametrize("errors", [(0.0, 0.0), (1e-7, 0.0), (0.0, 3e-8), (2e-7, 5e-8)])
def test_matmul_bound_skips_only_exact_zeros(errors: tuple[float, float]) -> None:
    # given data (no error) skips the sums of |a|·0: the bits must be those of the formula in full
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(5, 7)), rng.normal(size=(6, 7))
    ea, eb = np.full(a.shape, errors[0]), np.full(b.shape, errors[1])
    u = bounds.unit("float32")
    got = bounds.matmul("ik,jk->ij", a, ea, b, eb, u)
    want = _matmul_every_term("ik,jk->ij", a, ea, b, eb, u)
    assert got.shape == (5, 6) and got.view(np.uint64).tolist() == want.view(np.uint64).tolist()
    zero = bounds.matmul("ik,jk->ij", np.zeros((2, 3)), np.zeros((2, 3)), b[:4, :3], np.zeros((4, 3)), u)
    assert zero.shape == (2, 4) and not zero.any()
