"""The reprs of a trace and a step: short, informative, and the same text on every machine."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tracer
from tracer.core import portable
from tracer.core.trace import Trace


@pytest.fixture(scope="module")
def tutorial() -> Trace:
    return tracer.trace_self_attention()


def _nudged(trace: Trace, name: str, ulps: int) -> Trace:
    """``trace`` with node ``name`` moved by ``ulps`` units in the last place: another CPU's BLAS."""
    out = []
    for n in trace.nodes:
        if n.name == name:
            v = n.value
            for _ in range(abs(ulps)):
                v = np.nextafter(v, np.inf if ulps > 0 else -np.inf).astype(v.dtype)
            n = dataclasses.replace(n, value=v)
        out.append(n)
    return Trace(out, trace.meta)


def test_trace_repr_names_lesson_tokens_query_dtype_and_counts(tutorial: Trace) -> None:
    assert repr(tutorial) == (
        "Trace(lesson='simple', tokens=['Your', 'journey', 'starts', 'with', 'one', 'step'], "
        f"query=2, dtype='float32', {len(tutorial.nodes)} nodes, {len(tutorial)} steps)"
    )
    assert len(tutorial.nodes) == 56 and len(tutorial) == 1689


def test_trace_repr_of_other_lessons_and_dtypes() -> None:
    t = tracer.trace_lesson("causal")
    assert repr(t).startswith("Trace(lesson='causal', tokens=['Your', ")
    assert f"{len(t.nodes)} nodes, {len(t)} steps)" in repr(t)
    d = tracer.trace_self_attention(dtype="float64")
    assert "dtype='float64'" in repr(d)


def test_trace_repr_stays_short_for_long_or_hostile_tokens() -> None:
    tokens = [f"t{i}" for i in range(40)]
    tokens[1] = "a\nnewline and a very long token indeed"
    t = tracer.trace_self_attention(np.ones((40, 2), dtype=np.float32), tokens=tokens)
    text = repr(t)
    assert "\n" not in text and len(text) < 200
    assert "'a\\nnewline and a ver…'" in text  # escaped, cut to 20 characters
    assert "…, 't39'] (40 tokens)" in text


def test_step_repr_prints_the_value_at_the_report_decimals(tutorial: Trace) -> None:
    assert repr(tutorial["omega[2,1]"]) == "Step(omega[2,1] = 0.9544, op='sum', stage='scores')"
    assert repr(tutorial["alpha[2]"]) == "Step(alpha[2] = <float32 [6]>, op='div', stage='normalize')"
    assert repr(tutorial["x[2,1]"]) == "Step(x[2,1] = 0.5500, op='input', stage='inputs')"


def test_library_results_print_as_their_loop_form(tutorial: Trace) -> None:
    """A BLAS product or torch's softmax shows its loop form's value, not the bits this CPU produced."""
    # 0: the bits this CPU's kernel produced (equal to the loop form's on some CPUs, not on others); ±1: another CPU's
    for ulps in (0, 1, -1):
        lib = _nudged(tutorial, "mat.omega", ulps)["mat.omega[2,1]"]
        assert repr(lib) == "Step(mat.omega[2,1] = 0.9544, op='matmul', stage='matrix')"


@pytest.mark.parametrize("ulps", [-3, 3])
def test_reprs_do_not_move_when_a_library_kernel_does(tutorial: Trace, ulps: int) -> None:
    ids = ["mat.omega[2,1]", "mat.alpha[2,3]", "mat.z[2,1]", "torch.alpha[2,3]", "check.omega", "check.torch"]
    ids += [s.id for s in tutorial.steps(pattern="torch.alpha_sum*")]  # computed from a library result
    for name in ["mat.omega", "mat.alpha", "mat.z", "torch.alpha"]:
        moved = _nudged(tutorial, name, ulps)
        assert moved.tensor(name).tobytes() != tutorial.tensor(name).tobytes()
        for i in ids:
            assert repr(moved[i]) == repr(tutorial[i]), (name, i)
        assert repr(moved) == repr(tutorial)


def test_a_bounded_check_prints_its_bound_and_a_broken_one_its_residual(tutorial: Trace) -> None:
    node = tutorial.node("check.omega")
    bound = portable.bound(node)
    assert bound is not None
    assert repr(tutorial["check.omega"]) == f"Step(check.omega = ≤ {bound:.1e}, op='maxabsdiff', stage='matrix')"
    broken = Trace(
        [dataclasses.replace(n, value=np.float32(1e-3)) if n.name == "check.omega" else n for n in tutorial.nodes],
        tutorial.meta,
    )
    assert repr(broken["check.omega"]) == f"Step(check.omega = 1.00e-03 > {bound:.1e}, op='maxabsdiff', stage='matrix')"


def test_jupyter_text_plain_is_the_portable_repr(tutorial: Trace) -> None:
    step = tutorial["mat.alpha[2,3]"]
    assert step._repr_mimebundle_(include=["text/plain"]) == {"text/plain": repr(step)}
    assert repr(step.value) not in repr(step)
