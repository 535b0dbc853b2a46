"""The same mistake is worded the same way by every command, and a bad file's message names the file.

One wording for a lesson that does not exist (:func:`tracer.errors.unknown`),
whichever command met it; every error about the numbers in an ``--inputs``
file starts with that file's name, whichever check found it; a count of one
is singular; a CSV header row is skipped out loud.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.record.registry import names

UNKNOWN = f"unknown lesson 'nope': choose from {', '.join(names())}"


def _error(args: list[str], cwd: Path) -> str:
    """The one error line of a command that must fail with exit code 2 and write nothing."""
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=cwd) as here:
        result = runner.invoke(app, args)
        assert list(Path(here).iterdir()) == [], args  # nothing half-written
    assert result.exit_code == 2, (args, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0].removeprefix("Error: ")


@pytest.mark.parametrize(
    "args",
    [
        ["check", "attn.py:f", "--lesson", "nope"],
        ["explain", "--lesson", "nope", "x[1,1]"],
        ["steps", "--lesson", "nope"],
        ["trace", "--lesson", "nope"],
        ["notebook", "--lesson", "nope", "-o", "n.ipynb"],
        ["figures", "--lesson", "nope", "-o", "out"],
    ],
    ids=lambda a: a[0],
)
def test_an_unknown_lesson_reads_the_same_everywhere(args: list[str], tmp_path: Path) -> None:
    assert _error(args, tmp_path) == UNKNOWN


def test_report_words_it_the_same_way_and_offers_all(tmp_path: Path) -> None:
    offered = f"unknown lesson 'nope': choose from all, {', '.join(names())}"
    assert _error(["report", "--lesson", "nope"], tmp_path) == offered
    assert _error(["report", "--lang", "fr"], tmp_path) == "unknown language 'fr': choose from all, en, zh"


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("ragged.csv", "1,2,3\n4\n", "ragged rows: row 2 has 1 value, row 1 has 3"),
        ("nan.csv", "1,2,nan\n4,5,6\n", "value at row 1, column 3 is nan: inputs must be finite"),
        ("huge.csv", "1e39,2\n3,4\n", "value at row 1, column 1 (1e+39) does not fit in float32"),
        ("flat.npy", np.arange(3.0), "inputs must be a 2-d table (tokens x dims), got shape (3,)"),
        ("flags.npy", np.array([[True, False]]), "inputs must be numbers, got an array of bool"),
        ("empty.npy", np.zeros((0, 3)), "inputs are empty (shape 0 x 3)"),
        ("complex.npy", np.array([[1 + 2j]]), "inputs must be numbers, got an array of complex128"),
    ],
)
def test_every_problem_in_an_inputs_file_names_the_file(
    name: str, content: object, problem: str, tmp_path: Path
) -> None:
    path = tmp_path / "in" / name
    path.parent.mkdir()
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        np.save(path, content)
    assert _error(["trace", "--inputs", str(path)], tmp_path / "in") == f"'{name}': {problem}"


def test_a_lesson_option_keeps_its_own_name(tmp_path: Path) -> None:
    """An error about an option, not about the file's numbers, is not put on the file."""
    path = tmp_path / "x.csv"
    path.write_text("1,2\n3,4\n", encoding="utf-8")
    work = tmp_path / "w"
    work.mkdir()
    said = _error(["trace", "--inputs", str(path), "--lesson", "window", "--window", "0"], work)
    assert said.startswith("--window ") and "x.csv" not in said


def test_a_csv_header_row_is_skipped_out_loud(tmp_path: Path) -> None:
    path = tmp_path / "with-header.csv"
    path.write_text("token,d1,d2\nYour,0.43,0.15\njourney,0.55,0.87\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["steps", "--inputs", str(path), "x[*,1]"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["x[1,1]\t0.43", "x[2,1]\t0.55"]  # two tokens: the header is no token
    assert result.stderr == "note: 'with-header.csv': line 1 (token, d1, d2) is read as a header\n"
    path.write_text("Your,0.43,0.15\njourney,0.55,0.87\n", encoding="utf-8")
    assert CliRunner().invoke(app, ["steps", "--inputs", str(path), "x[*,1]"]).stderr == ""  # no header: no note
