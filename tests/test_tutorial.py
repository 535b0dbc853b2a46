"""Every number the tutorial prints, reproduced from recorded steps to its 4 decimals.

The expected strings are copied from the tutorial's printed output; each is
compared with the value of a step looked up by id.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracer
from tracer.core import portable
from tracer.core.fmt import num

# print(attn_scores_2)
ATTN_SCORES_2 = "0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865"
# print(attn_weights_2_tmp), print(attn_weights_2_tmp.sum())
WEIGHTS_TMP = "0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656"
# softmax_naive and torch.softmax print the same weights
WEIGHTS_SOFTMAX = "0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581"
# print(context_vec_2)
CONTEXT_2 = "0.4419, 0.6515, 0.5683"
# print(attn_scores) for all pairs
ATTN_SCORES = [
    "0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310",
    "0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865",
    "0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605",
    "0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565",
    "0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935",
    "0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450",
]


def row(trace: tracer.Trace, stem: str, n: int) -> str:
    """Format steps ``stem[1]``..``stem[n]`` (each looked up by its own id) like the tutorial."""
    return ", ".join(num(trace[f"{stem},{j}]"].value) for j in range(1, n + 1))


def test_attn_scores_2(tutorial: tracer.Trace) -> None:
    assert row(tutorial, "omega[2", 6) == ATTN_SCORES_2


def test_the_first_dot_product_and_its_products(tutorial: tracer.Trace) -> None:
    """res += inputs[0][idx] * query[idx]: the products, running sums and 0.9544."""
    assert num(tutorial["omega[2,1]"].value) == "0.9544"
    assert num(tutorial["omega[1,2]"].value) == "0.9544"
    products = [num(tutorial[f"omega[2,1].p[{k}]"].value) for k in (1, 2, 3)]
    assert products == ["0.2365", "0.1305", "0.5874"]
    sums = [num(tutorial[f"omega[2,1].s[{k}]"].value) for k in (1, 2, 3)]
    assert sums == ["0.2365", "0.3670", "0.9544"]


def test_weights_divided_by_sum(tutorial: tracer.Trace) -> None:
    assert row(tutorial, "div.alpha[2", 6) == WEIGHTS_TMP
    assert num(tutorial["div.alpha_sum[2]"].value) == "1.0000"


@pytest.mark.parametrize("stem", ["naive.alpha", "alpha", "torch.alpha"])
def test_softmax_weights(tutorial: tracer.Trace, stem: str) -> None:
    assert row(tutorial, f"{stem}[2", 6) == WEIGHTS_SOFTMAX
    assert num(tutorial[f"{stem}_sum[2]"].value) == "1.0000"


def test_context_vector_2(tutorial: tracer.Trace) -> None:
    assert ", ".join(num(tutorial[f"z[2,{k}]"].value) for k in (1, 2, 3)) == CONTEXT_2
    assert [num(v) for v in tutorial["z[2]"].value] == CONTEXT_2.split(", ")


def test_all_pairs_scores_loop_and_matrix(tutorial: tracer.Trace) -> None:
    # the matrix form is printed as its loop form (a BLAS kernel's last bits vary by machine), and it stays
    # within its check's bound of it
    shown = portable.shown(tutorial)
    bound = portable.bound(tutorial.node("check.omega"))
    assert bound is not None
    for i, expected in enumerate(ATTN_SCORES, 1):
        assert row(tutorial, f"omega[{i}", 6) == expected
        assert ", ".join(num(v) for v in shown[f"mat.omega[{i}]"].value) == expected
        assert np.all(np.abs(tutorial[f"mat.omega[{i}]"].value - tutorial[f"omega[{i}]"].value) <= bound)


def test_matrix_form_context_vectors(tutorial: tracer.Trace) -> None:
    """all_context_vecs = attn_weights @ inputs; its second row is context_vec_2."""
    assert [num(v) for v in portable.shown(tutorial)["mat.z[2]"].value] == CONTEXT_2.split(", ")
    assert portable.within(tutorial.node("check.z")) and tutorial["check.z"].value < 1e-6


def test_metadata(tutorial: tracer.Trace) -> None:
    assert tutorial.tokens == ["Your", "journey", "starts", "with", "one", "step"]
    assert tutorial.query == 2
    assert tutorial.dtype == "float32"
    assert tutorial.meta["lesson"] == "simple"
    assert tutorial.stages == ("inputs", "scores", "normalize", "context", "matrix")
