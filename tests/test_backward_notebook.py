"""notebook --backward: autograd's gradients printed beside the traced ones, run in a Jupyter kernel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.present.notebook.code import lesson_cells
from tracer.present.report import narrative_of
from tracer.present.views import lesson
from tracer.present.views.model import Code

from .notebooks import assert_matches, execute, kernel_fixture, printed_checks

pytestmark = pytest.mark.slow  # every test runs a notebook in a Jupyter kernel
nbformat = pytest.importorskip("nbformat")
BACKWARD = ("simple", "trainable", "causal", "window", "gqa", "rope", "multihead", "flash", "kvcache")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield from kernel_fixture(tmp_path_factory)


@pytest.mark.parametrize("name", BACKWARD)
def test_autograd_agrees_with_every_traced_gradient(tmp_path: Path, kernel: None, name: str) -> None:
    out = tmp_path / "nb.ipynb"
    done = CliRunner().invoke(app, ["notebook", "--lesson", name, "--backward", "-o", str(out)])
    assert done.exit_code == 0, done.output
    nb = execute(out)
    t = tracer.trace_lesson(name, backward=True)
    assert_matches(t, nb)  # torch's numbers beside the traced ones, within show()'s tolerance
    checked = {n for n, *_ in printed_checks(nb)}
    back = t.meta["backward"]
    assert set(back["gradients"]) <= checked  # every weight's and input's gradient
    for stage in back["stages"]:  # every backward stage that holds a gradient of a tensor autograd kept
        if any(n.name[1:] in {c[1:] for c in checked} for n in t.nodes if n.stage == stage):
            assert any(t[c].stage == stage for c in checked), stage
    titles = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert any(back["upstream"] in s for s in titles)  # the backward part opens with what it differentiates


def test_the_page_shows_the_autograd_cells_in_its_backward_sections() -> None:
    t = tracer.trace_lesson("trainable", backward=True)
    page = lesson.build(t, narrative_of(t, "en"))
    code = {s.anchor: [b for b in s.blocks if isinstance(b, Code)] for s in page.sections}
    assert ".backward(torch.tensor(" in code["dcontext"][0].source
    assert code["dprojections"][0].source.startswith('print(t["W_query"].grad)')  # the page prints what show checks
    plain = lesson_cells(tracer.trace_lesson("trainable"))
    assert plain is not None and not any(k.startswith("d") for k in plain)  # a forward trace: no backward cells
