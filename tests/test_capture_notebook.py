"""The notebook of a captured trace runs top to bottom and prints the trace's own values beside torch's.

Captured: the book's causal class, its multi-head class, and the chapter's
loop that writes each score into ``torch.empty``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer
from tests import book_attention as book
from tests import test_capture_writes as writes
from tracer.cli import app

from .notebooks import assert_matches, execute, kernel_fixture, printed_checks

nbformat = pytest.importorskip("nbformat")
HERE = Path(__file__).parent
RUNNERS = {
    "causal": HERE / "book_attention.py",
    "mha": HERE / "book_attention.py",
    "all_pairs": HERE / "test_capture_writes.py",
}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield from kernel_fixture(tmp_path_factory)


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_captured_notebook_runs_and_prints_the_traced_values(tmp_path: Path, kernel: None, runner: str) -> None:
    out = tmp_path / f"{runner}.ipynb"
    res = CliRunner().invoke(app, ["notebook", "--torch", f"{RUNNERS[runner]}:{runner}", "-o", str(out)])
    assert res.exit_code == 0, res.output
    ran = execute(out)
    errors = [o for c in ran.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    t = tracer.trace_torch(getattr(writes if runner == "all_pairs" else book, runner))
    checks = printed_checks(ran)
    names = [name.split("[")[0] for name, *_ in checks]  # the query's row of a node: attn_weights[2]
    assert any(n.split(".")[-1] == "attn_weights" for n in names), names
    if runner == "all_pairs":  # the scores the loop wrote entry by entry
        assert "attn_scores" in names
    else:
        assert t.meta["output"] in names
    assert assert_matches(t, ran) == len(checks) >= 5
    for name, ours, traced, diff in checks:  # the re-run computes what the capture recorded, to the last bit
        assert ours == traced and diff == 0.0, name
