"""The exact ``exp`` at scale: how much work takes the slow path, and inputs of any size the limits allow.

Speed is the bench's business (``bench/bench_trace.py``); what a test can hold
without being fooled by a busy machine is a *count*: of the entries a whole
lesson sends through ``exp``, how many went to :mod:`decimal`, one by one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.core import exact
from tracer.present import report

LESSONS = ["simple", "trainable", "causal", "multihead"]
SHARE = 1e-4
"""At most 0.01% of the entries may take the slow exact path."""


def _counted(lesson: str, x: torch.Tensor, dtype: str) -> exact.Tally:
    with exact.counting() as tally:
        tracer.trace_lesson(lesson, inputs=x, query=1, dtype=dtype)
    return tally


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_t512_trace_sends_almost_nothing_to_the_slow_path(dtype: str) -> None:
    x = torch.rand(512, 64, generator=torch.Generator().manual_seed(0))  # the bench's inputs
    tally = _counted("simple", x, dtype)
    assert tally.entries >= 4 * 512 * 512  # every exp of every stage was counted
    assert tally.slow <= SHARE * tally.entries, f"{tally.slow:,} of {tally.entries:,} entries took the slow path"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_keeps_the_slow_path_rare_in_float64(lesson: str) -> None:
    x = torch.rand(128, 32, generator=torch.Generator().manual_seed(1))
    tally = _counted(lesson, x, "float64")
    assert tally.entries >= 128 * 128
    assert tally.slow <= SHARE * tally.entries + 1


def test_the_counter_counts_what_it_says() -> None:
    # entries near a float32 halfway point exist: with the margin widened, all of them take the slow path
    x = np.linspace(-5, 5, 1001, dtype=np.float32)
    with exact.counting() as tally:
        exact.exp(x)
    assert tally.entries == 1001 and tally.slow < 5
    old = exact.MARGIN
    try:
        exact.MARGIN = 1.0
        with exact.counting() as wide:
            exact.exp(x)
    finally:
        exact.MARGIN = old
    assert wide.slow == 1001


def _inputs(kind: str, t: int = 6, d: int = 4) -> np.ndarray:
    rng = np.random.default_rng(5)
    if kind == "pixels":  # raw pixel values, 0 to 255: the scores reach 10**5
        return rng.integers(0, 256, (t, d)).astype(np.float64)
    return rng.uniform(-1e6, 1e6, (t, d)).round(2)  # the documented limit's size of component


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["pixels", "huge"])
def test_large_components_trace_and_report_in_every_lesson(lesson: str, dtype: str, kind: str) -> None:
    trace = tracer.trace_lesson(lesson, inputs=_inputs(kind), dtype=dtype)
    files = report.build(trace, "en")
    assert files["index.html"].startswith(b"<!DOCTYPE html>") and files["index.md"]
    assert trace.verify().ok


@pytest.mark.parametrize("command", ["trace", "steps", "explain", "verify", "report", "notebook"])
def test_pixel_inputs_work_in_every_command(tmp_path: Path, command: str) -> None:
    src = tmp_path / "pixels.csv"
    np.savetxt(src, _inputs("pixels"), delimiter=",", fmt="%d")
    runner = CliRunner()
    given = ["--inputs", str(src)]
    if command == "verify":
        done = runner.invoke(app, ["trace", *given, "-o", str(tmp_path / "t.json")])
        assert done.exit_code == 0, done.output
        args = ["verify", str(tmp_path / "t.json")]
    else:
        extra = {
            "trace": ["-o", str(tmp_path / "t.json")],
            "steps": ["alpha[2,*]"],
            "explain": ["z[2]"],
            "report": ["-o", str(tmp_path / "r")],
            "notebook": ["-o", str(tmp_path / "n.ipynb")],
        }[command]
        args = [command, *given, *extra]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output and "Overflow" not in res.output
