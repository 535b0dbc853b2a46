"""Promises of the CLI that had no test: bad JSON inputs, option clashes, -o -, write failures,
determinism across processes, and for every command the real stderr of a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tracer.cli import app
from tracer.errors import InputError
from tracer.record import custom, inputs

ROOT = Path(__file__).resolve().parent.parent


def invoke(*args: str) -> Result:
    """Run the CLI in-process; any exception but a SystemExit is a crash, whatever the exit code."""
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m tracer`` in a fresh process, so stderr is what a user sees."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tracer", *args], capture_output=True, text=True, cwd=cwd, env=full_env, timeout=300
    )


def one_line_error(proc: subprocess.CompletedProcess[str], message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith("Error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"inputs": 5}', "inputs must be a list of rows, got int"),
        ('"abc"', "inputs must be a list of rows, got str"),
        ('{"inputs": null}', "inputs must be a list of rows, got null"),
        ("null", "inputs must be a list of rows, got null"),
        ('{"inputs": [[1, 2]], "tokens": 7}', "tokens"),
    ],
)
def test_json_inputs_that_are_not_rows(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "in.json"
    path.write_text(content)
    result = invoke("trace", "--inputs", str(path))
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_pipeline_with_a_lesson_is_refused() -> None:
    result = invoke(
        "trace",
        "--pipeline",
        "examples/lesson_plugin/attn_lesson_temperature/pipeline.py:build",
        "--lesson",
        "trainable",
    )
    assert result.exit_code == 2
    assert "--pipeline replaces the lesson" in result.output


def test_output_dash_is_stdout(tmp_path: Path) -> None:
    dash = invoke("trace", "-o", "-")
    plain = invoke("trace")
    assert dash.exit_code == plain.exit_code == 0
    assert dash.stdout_bytes == plain.stdout_bytes and dash.stdout_bytes.startswith(b"{")
    assert not (tmp_path / "-").exists() and not Path("-").exists()


def test_report_into_a_file_path_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("mine")
    result = invoke("report", "-o", str(target))
    assert result.exit_code == 2 and "exists and is not a folder" in result.output
    assert target.read_text() == "mine"


def test_write_failures_are_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    trace = invoke("trace", "-o", str(blocker / "t.json"))
    assert trace.exit_code == 2 and "cannot write" in trace.output
    report = invoke("report", "-o", str(blocker / "sub"))
    assert report.exit_code == 2 and str(blocker / "sub") in report.output
    notebook = invoke("notebook", "-o", str(blocker / "n.ipynb"))
    assert notebook.exit_code == 2
    assert blocker.read_text() == "x"


def test_library_errors_name_arguments_and_the_cli_names_options() -> None:
    with pytest.raises(InputError, match=r"^text has no tokens$"):
        inputs.from_text("  ", 3, 0)
    with pytest.raises(InputError, match=r"^dim must be a whole number of at least 1, got 0$"):
        inputs.from_text("a b", 0, 0)
    with pytest.raises(InputError, match=r"^spec wants module:function"):
        custom.load("nocolon")
    assert "--text has no tokens" in invoke("trace", "--text", "  ").output
    assert "--dim must be a whole number of at least 1, got 0" in invoke("trace", "--text", "a", "--dim", "0").output
    assert "--pipeline wants module:function" in invoke("trace", "--pipeline", "nocolon").output


def test_traces_and_reports_are_the_same_in_every_process(tmp_path: Path) -> None:
    """Not only twice in one process: hash seeds and fresh imports must not change a byte."""
    for seed in ("1", "2"):
        assert (
            process(
                "trace", "--lesson", "causal", "-o", str(tmp_path / f"t{seed}.json"), env={"PYTHONHASHSEED": seed}
            ).returncode
            == 0
        )
        out = tmp_path / f"r{seed}"
        assert process("report", "--format", "md", "-o", str(out), env={"PYTHONHASHSEED": seed}).returncode == 0
    assert (tmp_path / "t1.json").read_bytes() == (tmp_path / "t2.json").read_bytes()
    assert (tmp_path / "r1" / "index.md").read_bytes() == (tmp_path / "r2" / "index.md").read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trace", "--query", "9"], "query 9 is out of range"),
        (["steps", "nope[1]"], "no step 'nope[1]'"),
        (["explain", "omega[9,9]"], "out of range"),
        (["report", "--from", "missing.json"], "no such trace file"),
        (["report", "--lang", "fr"], "unknown language 'fr': choose from all, en, zh"),
        (  # lesson model's --layer is as near a spelling as --lang
            ["report", "--lnag", "en"],
            "No such option '--lnag'. (Did you mean one of: '--lang', '--layer'?) (see: attn-trace report --help)",
        ),
        (["check", "a.py:f", "--lesson"], "Option '--lesson' requires an argument. (see: attn-trace check --help)"),
        (["--bogus"], "No such option '--bogus'. (see: attn-trace --help)"),
        (["frobnicate"], "No such command 'frobnicate'. (see: attn-trace --help)"),
        (["notebook", "--lesson", "nope", "-o", "n.ipynb"], "unknown lesson 'nope'"),
        (["diff", "missing-a.json", "missing-b.json"], "no such trace file"),
        (["lessons", "extra"], "unexpected extra argument"),
    ],
)
def test_every_command_fails_in_one_line_on_real_stderr(tmp_path: Path, args: list[str], message: str) -> None:
    """Click's own usage errors too: one line naming the problem and the help to read, not usage + hint + error."""
    proc = process(*args, cwd=tmp_path)
    one_line_error(proc, message)
    assert list(tmp_path.iterdir()) == []  # nothing half-written
