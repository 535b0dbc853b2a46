"""The temperature lesson, installed: registered, its values torch's, its option checked, its pages made."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tracer
from tracer.errors import InputError
from tracer.present import notebook
from tracer.record import registry


def test_it_is_a_registered_lesson() -> None:
    assert "temperature" in registry.names()
    lesson = registry.get("temperature")
    assert lesson.options is not None and lesson.narrative("en") and lesson.narrative("zh")


@pytest.mark.parametrize("tau", [0.5, 1.0, 2.0, 7.0])
def test_the_weights_and_contexts_are_torchs(tau: float) -> None:
    t = tracer.trace_lesson("temperature", tau=tau, dtype="float64")
    x = torch.tensor(np.asarray(t.tensor("x")), dtype=torch.float64)
    weights = torch.softmax(x @ x.T / tau, dim=-1)
    assert np.allclose(t.tensor("alpha"), weights.numpy(), rtol=1e-12, atol=1e-14)
    assert np.allclose(t.tensor("z"), (weights @ x).numpy(), rtol=1e-12, atol=1e-14)


def test_a_higher_temperature_flattens_the_weights() -> None:
    spread = [float(np.ptp(tracer.trace_lesson("temperature", tau=tau).tensor("alpha"))) for tau in (0.5, 2.0, 8.0)]
    assert spread[0] > spread[1] > spread[2]


@pytest.mark.parametrize("tau", [0, -1.0, float("nan"), float("inf"), True, "2"])
def test_a_temperature_that_is_not_a_positive_number_is_refused(tau: object) -> None:
    with pytest.raises(InputError, match="must be a finite number above 0"):
        tracer.trace_lesson("temperature", tau=tau)


def test_its_notebook_checks_every_stage() -> None:
    cells = notebook.cells(tracer.trace_lesson("temperature"))
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert all(f'show("{name}"' in code for name in ("x", "omega", "cooled", "alpha", "z"))
