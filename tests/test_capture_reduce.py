"""Reductions over several axes, or all of them, are step by step too: a flat reading, then running sums.

Captured on tensors of distinct values, so a running sum that read the
wrong entry would add up to another total.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import tracer
from tracer.present.explain import explain


def distinct(*shape: int) -> torch.Tensor:
    return torch.arange(1, 1 + int(np.prod(shape)), dtype=torch.float32).reshape(shape) / 7


CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sum two axes": lambda x: x.sum(dim=(1, 2)),
    "sum axes given backwards": lambda x: torch.sum(x, (2, 0)),
    "sum of everything": lambda x: x.sum(),
    "mean two axes keepdim": lambda x: x.mean(dim=(0, 2), keepdim=True),
    "mean of everything": lambda x: x.mean(),
    "max of everything": lambda x: torch.max(x),
    "amax two axes": lambda x: x.amax(dim=(0, 1)),
    "max along one axis": lambda x: x.max(dim=1).values,
}


@pytest.mark.parametrize("case", CASES)
def test_several_axes_are_steps_with_torch_values(case: str) -> None:
    x = distinct(2, 3, 4)
    fn = CASES[case]
    t = tracer.trace_torch(fn, x)
    out = fn(x)
    assert t.meta["opaque"] == []
    assert np.array_equal(t.tensor(t.meta["output"]), out.numpy())
    for step in t.steps():  # each entry of a flat reading is the one entry of x it names
        if step.node.name.endswith(".flat"):
            (src,) = step.inputs
            assert t[src].value == step.value


def test_a_two_axis_sum_runs_left_to_right_through_the_entries_it_names() -> None:
    x = distinct(2, 3, 4)
    t = tracer.trace_torch(lambda x: x.sum(dim=(1, 2)), x)
    out = t.meta["output"]
    flat = t.tensor(f"{out}.flat")
    assert np.array_equal(flat, x.reshape(2, 12).numpy())
    assert np.array_equal(t.tensor(f"{out}.s"), np.cumsum(flat, axis=1, dtype=np.float32))
    assert t[f"{out}.flat[2,5]"].inputs == ("x[2,2,1]",)
    head = explain(t, f"{out}[2]").splitlines()[0]
    assert head.startswith(f"{out}[2] = Σ_m {out}.flat[2,m] = 1.8571 + 2.0000") and head.endswith("= 31.7143")
