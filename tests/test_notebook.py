"""attn-trace notebook: valid nbformat, byte-identical reruns, runs top to bottom and prints the trace's values."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.present import narrative
from tracer.present import notebook as notebooks
from tracer.present.notebook.code import lesson_cells
from tracer.present.views import code, pagecode
from tracer.present.views.model import Code, Page
from tracer.record import registry

from . import tinymodels as tm
from .notebooks import assert_matches, execute, kernel_fixture, printed_checks

pytestmark = pytest.mark.slow  # every test runs a notebook in a Jupyter kernel
nbformat = pytest.importorskip("nbformat")
NARRATED = [name for name in registry.names() if narrative.available(name)]
HOSTILE = 'It\'s """ <b>bold</b> $x$ a|b back\\slash'


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield from kernel_fixture(tmp_path_factory)


def stand_in_args(lesson: str) -> list[str]:
    """``--lesson lesson`` and, for lesson model, the options of the tiny stand-in model (tests/tinymodels.py)."""
    return ["--lesson", lesson, *(a for k, v in tm.stand_in(lesson).items() for a in (f"--{k}", str(v)))]


def write(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / f"nb-{len(list(tmp_path.iterdir()))}.ipynb"
    result = CliRunner().invoke(app, ["notebook", *args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_every_lesson_with_a_narrative_has_notebook_code() -> None:
    # in the course order
    lessons = ["simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache", "model"]
    assert lessons == NARRATED
    for name in lessons:
        assert notebooks.cells(tm.lesson_trace(name))


def test_a_lesson_without_cells_says_so_before_computing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One line, exit 2, before anything is computed (the model named is never read, the file never written)."""
    import dataclasses

    quiet = dataclasses.replace(registry.get("model"), notebook=None)
    monkeypatch.setattr(registry, "get", lambda name: quiet)
    out = tmp_path / "unused.ipynb"
    args = ["notebook", "--lesson", "model", "--model", str(tmp_path / "nowhere.gguf"), "-o", str(out)]
    said = CliRunner().invoke(app, args)
    assert said.exit_code == 2 and said.output.startswith("Error: no notebook code for lesson"), said.output
    assert not out.exists()


@pytest.mark.parametrize("lesson", NARRATED)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_valid_and_byte_identical(tmp_path: Path, lesson: str, lang: str) -> None:
    a = write(tmp_path, *stand_in_args(lesson), "--lang", lang)
    b = write(tmp_path, *stand_in_args(lesson), "--lang", lang)
    assert a.read_bytes() == b.read_bytes()
    nb = nbformat.read(a, as_version=4)
    nbformat.validate(nb)
    ids = [c.id for c in nb.cells]
    assert len(set(ids)) == len(ids) and all(i.startswith(f"{lesson}-") for i in ids)
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.execution_count is None and c.outputs == []
    story = narrative.load(lesson, lang)
    text = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert story.title in text
    for stage in tm.lesson_trace(lesson).stages:
        assert story.stage(stage).title in text
    assert json.loads(a.read_text(encoding="utf-8"))["metadata"]["attn_trace"]["lang"] == lang


def test_markdown_escapes_tokens_and_code_quotes_them(tmp_path: Path) -> None:
    out = write(tmp_path, "--text", HOSTILE, "--query", "3")
    nb = nbformat.read(out, as_version=4)
    intro = nb.cells[0].source
    assert "<b>" not in intro and "&lt;b&gt;" in intro
    code = "".join(c.source for c in nb.cells if c.cell_type == "code")
    assert repr(HOSTILE.split()) in code


@pytest.mark.parametrize("lesson", NARRATED)
def test_executes_and_prints_the_traced_values(tmp_path: Path, kernel: None, lesson: str) -> None:
    out = write(tmp_path, *stand_in_args(lesson))
    nb = execute(out)
    t = tm.lesson_trace(lesson)
    checked = {name for name, *_ in printed_checks(nb)}
    assert assert_matches(t, nb) >= len(t.stages)
    per_stage = lesson_cells(t)
    assert per_stage is not None
    for stage in t.stages:  # every stage prints at least one of its own steps
        if stage not in per_stage:  # ... but one whose every step was given, not computed (model's next token)
            assert {n.op for n in t.nodes if n.stage == stage} <= {"input", "const"}, stage
            continue
        assert any(t[name].stage == stage for name in checked), stage
    # the report shows these cells, in this order, in the form a reader pastes (tests/test_page_code.py runs it)
    shown = [b for sec in report_page(t).sections for b in sec.blocks if isinstance(b, Code)]
    ran = [c for c in nb.cells if c.cell_type == "code"][2:]  # after the setup and TRACED cells
    cells = [c for sources in per_stage.values() for c in sources]
    assert sorted(c.source for c in ran) == sorted(c.rstrip("\n") for c in cells)
    if code.too_many_numbers(t, per_stage):  # a model's weights are not pasted from a page: the notebook has them
        assert shown == [] and lesson == "model"
        return
    head = pagecode.setup(t, cells)  # the imports open the page's first block
    assert sorted(b.source.removeprefix(head) for b in shown) == sorted(pagecode.page_form(t, c)[0] for c in cells)


EXACT = ("h", "q", "k", "v", "rope.angle", "rope.cos", "rope.q", "rope.k", "omega", "neg.omega")
"""Model's steps before the softmax: its notebook sums in the trace's order and rounds as it does, so bit for bit."""


def test_model_notebook_on_a_hugging_face_folder_pairs_halves(tmp_path: Path, kernel: None) -> None:
    """A folder's model rotates halves: the cell pairs them so, and the other pairing would fail its check."""
    weights, tok = tm.draw(seed=5)
    folder = tm.write_hf(tmp_path / "hf", weights, tok)
    options = {"model": str(folder), "text": "a dog ran after 3 cats", "layer": 2, "head": 1}
    out = write(tmp_path, "--lesson", "model", *(a for k, v in options.items() for a in (f"--{k}", str(v))))
    t = tracer.trace_lesson("model", **options)
    assert t.meta["model"]["pairs"] == "half"
    nb = execute(out)
    checks = {name: diff for name, _, _, diff in printed_checks(nb)}
    assert assert_matches(t, nb) == len(checks) >= 18
    assert {name: checks[name] for name in EXACT} == dict.fromkeys(EXACT, 0.0)
    assert checks["heads.alpha[2]"] < 1e-6  # the float64 pass over the whole layer: the same head's weights
    wrong = nbformat.read(out, as_version=4)
    (cell,) = [c for c in wrong.cells if c.id == "model-rotation-1"]
    cell.source = cell.source.replace("first = torch.arange(d_h // 2)", "first = torch.arange(0, d_h, 2)")
    cell.source = cell.source.replace("second = first + d_h // 2", "second = first + 1")
    nbformat.write(wrong, out)
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError, match=r"rope\.q"):
        execute(out)


def report_page(t: tracer.Trace) -> Page:
    from tracer.lessons.simple import page as walkthrough
    from tracer.present import overflow
    from tracer.present.report import narrative_of
    from tracer.present.views import lesson

    if t.meta.get("lesson") == "simple":
        return walkthrough.build(t, "en", 4, overflow.scaled(t))
    return lesson.build(t, narrative_of(t, "en"))


def test_trainable_linear_weights_and_causal_zh_float64(tmp_path: Path, kernel: None) -> None:
    nb = execute(write(tmp_path, "--lesson", "trainable", "--weights", "linear", "--query", "4"))
    assert assert_matches(tracer.trace_lesson("trainable", weights="linear", query=4), nb) >= 10
    args = ["--text", "a b c d e", "--dtype", "float64", "--query", "5"]
    nb = execute(write(tmp_path, "--lesson", "causal", "--lang", "zh", *args))
    from tracer.cli import build_trace

    t = build_trace("causal", None, None, "a b c d e", None, None, 5, "float64")
    names = {name for name, *_ in printed_checks(nb)}
    assert assert_matches(t, nb) >= 15 and {"dropout.alpha", "causal.alpha", "batch.z"} <= names


def test_executes_for_other_inputs_float64_and_hostile_tokens(tmp_path: Path, kernel: None) -> None:
    args = ["--text", HOSTILE, "--dim", "4", "--seed", "7", "--query", "3", "--dtype", "float64"]
    out = write(tmp_path, *args, "--lang", "zh")
    nb = execute(out)
    from tracer.cli import build_trace

    t = build_trace("simple", None, None, HOSTILE, 4, 7, 3, "float64")
    assert assert_matches(t, nb) >= 5
    assert "z[3]" in {name for name, *_ in printed_checks(nb)}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lesson", "nope"], "unknown lesson"),
        (["--lang", "fr"], "'fr' is not one of"),
        (["--query", "9"], "query"),
        (["--dim", "3"], "--dim and --seed go with --text"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "n.ipynb"
    result = CliRunner().invoke(app, ["notebook", *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not out.exists()


def test_output_rules(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["notebook"]).exit_code == 2  # -o is required
    bad = runner.invoke(app, ["notebook", "-o", str(tmp_path / "n.txt")])
    assert bad.exit_code == 2 and ".ipynb" in bad.output
    out = tmp_path / "n.ipynb"
    out.write_text("mine")
    clash = runner.invoke(app, ["notebook", "-o", str(out)])
    assert clash.exit_code == 2 and "--force" in clash.output and out.read_text() == "mine"
    assert runner.invoke(app, ["notebook", "-o", str(out), "--force"]).exit_code == 0
    assert out.read_text(encoding="utf-8").startswith("{")


def test_causal_dropout_on_a_machine_whose_torch_draws_another_mask(tmp_path: Path, kernel: None) -> None:
    out = write(tmp_path, "--lesson", "causal")
    nb = nbformat.read(out, as_version=4)
    (cell,) = [c for c in nb.cells if c.id == "causal-dropout-1"]
    cell.source = cell.source.replace("torch.manual_seed(123)", "torch.manual_seed(124)")  # another RNG stream
    nbformat.write(nb, out)
    ran = execute(out)
    text = "".join(o.get("text", "") for c in ran.cells if c.cell_type == "code" for o in c.outputs)
    assert "applying the traced mask instead" in text
    names = [name for name, *_ in printed_checks(ran)]
    assert {"dropout.alpha", "dropout.keep"} <= set(names)  # the traced mask, applied here
    assert assert_matches(tracer.trace_lesson("causal"), ran) >= 15


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_own_pipeline_notebook_reruns_it_from_the_repo_root(tmp_path: Path, kernel: None, lang: str) -> None:
    spec = "examples/lesson_plugin/attn_lesson_temperature/pipeline.py:build"
    a = write(tmp_path, "--pipeline", spec, "--lang", lang)
    assert a.read_bytes() == write(tmp_path, "--pipeline", spec, "--lang", lang).read_bytes()
    nb = nbformat.read(a, as_version=4)
    nbformat.validate(nb)
    from tracer.record import custom

    t = custom.run(spec, tracer.api.example())
    story = t.meta["narrative"][lang]
    assert story["title"] in nb.cells[0].source
    assert f"PIPELINE = {spec!r}" in "".join(c.source for c in nb.cells if c.cell_type == "code")
    if lang == "en":  # run with the repo root as working directory, where the spec's path is found
        ran = execute(a)
        assert [name for name, *_ in printed_checks(ran)] == ["x[2]", "omega[2]", "cooled[2]", "alpha[2]", "z[2]"]
        assert assert_matches(t, ran) == 5
