"""The command line: output, exit codes, one-line errors, nothing half-written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.core import serialize

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_explain_writes_the_board_line() -> None:
    code, out, _ = run("explain", "omega[2,1]")
    assert code == 0
    assert out.splitlines()[:2] == [  # fitted to 80 columns, broken between the equation's steps
        "omega[2,1] = x(2)·x(1) = 0.55×0.43 + 0.87×0.15 + 0.66×0.89",
        "    = 0.2365 + 0.1305 + 0.5874 = 0.9544",
    ]
    assert "inputs: omega[2,1].p[1], omega[2,1].p[2], omega[2,1].p[3]" in out
    code, out, _ = run("explain", "omega[2,1].p[3]")
    assert out.splitlines()[0] == "omega[2,1].p[3] = x(2)_3 × x(1)_3 = 0.66 × 0.89 = 0.5874"
    assert "inputs: x[2,3], x[1,3]" in out
    code, out, _ = run("explain", "x[1,3]")
    assert out.splitlines()[0] == "x[1,3] = 0.89" and "token 1 ('Your')" in out


def test_explain_chain_reaches_the_inputs() -> None:
    """Following the first input of each step from z[2,1] ends at an input."""
    trace = tracer.trace_self_attention()
    step = "z[2,1]"
    for _ in range(20):
        code, out, _ = run("explain", step)
        assert code == 0
        line = next((ln for ln in out.splitlines() if ln.strip().startswith("inputs:")), None)
        if line is None:
            break
        step = line.split(":", 1)[1].split(", ")[0].strip()
    assert trace[step].op == "input"


def test_steps_listing_and_filters() -> None:
    code, out, _ = run("steps", "omega[2]")
    assert code == 0
    assert out.splitlines() == [
        "omega[2,1]\t0.9544",
        "omega[2,2]\t1.4950",
        "omega[2,3]\t1.4754",
        "omega[2,4]\t0.8434",
        "omega[2,5]\t0.7070",
        "omega[2,6]\t1.0865",
    ]
    code, out, _ = run("steps", "--stage", "context", "z[2,*]")
    assert out.splitlines() == ["z[2,1]\t0.4419", "z[2,2]\t0.6515", "z[2,3]\t0.5683"]
    code, out, _ = run("steps", "--stage", "matrix", "--decimals", "2")
    # a matrix-form check prints the bound the maths fixes, never the residual of this machine's BLAS kernel
    assert "check.omega\t≤ 5.4e-07" in out and "mat.omega\t<6 x 6 tensor>" in out
    code, out, _ = run("steps", "--limit", "2")
    assert out.splitlines() == ["x[1,1]\t0.43", "x[1,2]\t0.15"]


def test_trace_to_file_and_back(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    code, _, err = run("trace", "-o", str(out))
    assert code == 0 and "1,689 steps" in err
    assert json.loads(out.read_text())["version"] == serialize.FORMAT_VERSION
    code, listing, _ = run("steps", "--from", str(out), "alpha[2]")
    assert code == 0 and listing.splitlines()[0] == "alpha[2,1]\t0.1385"
    code, _, err = run("trace", "-o", str(out))
    assert code == 2 and "already exists; use --force" in err
    assert run("trace", "-o", str(out), "--force", "--query", "3")[0] == 0
    assert tracer.load(out).query == 3


def test_trace_to_stdout_is_the_same_file(tmp_path: Path) -> None:
    code, out, _ = run("trace")
    assert code == 0
    path = tmp_path / "t.json"
    path.write_text(out)
    assert tracer.load(path)["omega[2,1]"].value == tracer.trace_self_attention()["omega[2,1]"].value


def test_text_input() -> None:
    code, out, _ = run("steps", "--text", "a b a", "--dim", "2", "--seed", "1", "x[*]")
    assert code == 0
    rows = [ln.split("\t")[1] for ln in out.splitlines()]
    assert len(rows) == 6 and rows[0:2] == rows[4:6]


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({"r.json": "[[1, 2], [3]]"}, ["--inputs", "r.json"], "ragged rows"),
        ({"s.json": '[[1, "x"]]'}, ["--inputs", "s.json"], "not a number"),
        ({"n.json": "[[1, NaN]]"}, ["--inputs", "n.json"], "must be finite"),
        ({"i.csv": "1,inf\n"}, ["--inputs", "i.csv"], "must be finite"),
        ({"e.json": "[]"}, ["--inputs", "e.json"], "empty"),
        ({"t.json": "[[1], [2]]"}, ["--inputs", "t.json", "--tokens", "a b c"], "3 tokens given for 2 input rows"),
        ({}, ["--query", "7"], "query 7 is out of range"),
        ({}, ["--inputs", "missing.json"], "no such file"),
        ({"fake.npy": "1 2 3"}, ["--inputs", "fake.npy"], "not a .npy file"),
        ({"fake.pt": "hello"}, ["--inputs", "fake.pt"], "not a readable PyTorch file"),
        ({"fake.json": "\x00\x01"}, ["--inputs", "fake.json"], "not valid JSON"),
        ({}, ["--text", "a " * 2100], "past the limit of 2048"),
        ({}, ["--text", "a b", "--dim", "1025"], "past the limit of 1024"),
        ({}, ["--dim", "4"], "--dim and --seed go with --text"),
        ({}, ["--text", "a", "--tokens", "b"], "cannot be combined"),
        ({}, ["--lesson", "nope"], "unknown lesson 'nope'"),
        ({}, ["--dtype", "float16"], "Invalid value for '--dtype'"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        Path(name).write_text(text)
    code, _out, err = run("trace", "-o", "out.json", *args)
    assert code == 2
    assert message in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[-1].startswith("Error:") and "Traceback" not in err
    assert not Path("out.json").exists()
    assert not list(tmp_path.glob(".out.json.*"))


def test_big_input_file_past_the_limit(tmp_path: Path) -> None:
    np.save(tmp_path / "big.npy", np.zeros((600, 100)))
    code, _, err = run("trace", "--inputs", str(tmp_path / "big.npy"))
    assert code == 2 and "too large" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["explain", "omega[9,1]"], "index i=9 is out of range 1..6"),
        (["explain", "nope"], "no step 'nope'"),
        (["steps", "--stage", "nope"], "unknown stage 'nope'"),
        (["steps", "zzz*"], "no steps match"),
        (["steps", "--from", "missing.json"], "no such trace file"),
        (["steps", "--from", "t.json", "--query", "3"], "cannot be combined"),
    ],
)
def test_bad_usage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(*args)
    assert code == 2 and message in err and "Traceback" not in err


def test_bad_trace_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    tracer.trace_self_attention().save(path)
    path.write_text(path.read_text()[:-100])
    code, _, err = run("explain", "omega[2,1]", "--from", str(path))
    assert code == 2 and "truncated" in err


def _subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_console_script_and_module_agree() -> None:
    a = _subprocess("-m", "tracer", "explain", "alpha[2,1]")
    b = _subprocess("cli.py", "explain", "alpha[2,1]")
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout and "= 0.1385" in a.stdout
    bad = _subprocess("-m", "tracer", "steps", "--query", "0")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr


def test_help_imports_no_torch_or_matplotlib() -> None:
    code = (
        "import sys; from click.testing import CliRunner; import tracer.cli as cli; "
        "r = CliRunner().invoke(cli.app, ['--help']); assert r.exit_code == 0; "
        "print(sorted(m for m in ('torch', 'matplotlib', 'jinja2') if m in sys.modules))"
    )
    result = _subprocess("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_core_layers_import_no_torch_or_renderers() -> None:
    """The data model, files and explanations are numpy-only (click's test_imports idea)."""
    code = (
        "import sys, tracer, tracer.core.trace, tracer.core.serialize, tracer.core.ids, tracer.core.fmt; "
        "import tracer.present.explain; "
        "print(sorted(m for m in ('torch', 'matplotlib', 'jinja2', 'click') if m in sys.modules))"
    )
    result = _subprocess("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_version() -> None:
    code, out, _ = run("--version")
    assert code == 0 and tracer.__version__ in out
