"""A file's name in a message is quoted (issue 24, item 12): it cannot pass for part of the sentence.

A name can hold spaces, colons, a newline or words of our own ("is fine"),
so messages show it as Python writes a string: in quotes, with a newline as
``\\n``.  Every error stays one line, and the reader can tell where the name ends.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.core.files import quoted

NAMES = ["evil\nError: all fine.json", "my data.json", "x.json is fine: ok.json", "bidi\u202egnp.json"]


def run(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and r.output.startswith("Error: "), r.output
    return r.output


@pytest.mark.parametrize("name", NAMES)
def test_a_trace_files_name_is_quoted_in_its_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_text("{}")
    shown = quoted(name)
    assert shown.startswith("'") and "\n" not in shown and "\u202e" not in shown
    for args in (["verify", name], ["report", "--from", name, "-o", "out"], ["explain", "omega[2,1]", "--from", name]):
        assert f"Error: {shown} is not an attn-trace trace file" in run(*args)


@pytest.mark.parametrize("name", NAMES)
def test_an_inputs_files_name_is_quoted_in_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_text('{"rows": []}')
    assert f'{quoted(name)}: a JSON object must have an "inputs" key' in run("trace", "--inputs", name)
    assert f"no such file: {quoted(name + 'x')}" in run("trace", "--inputs", name + "x")


def test_an_output_that_exists_is_named_in_quotes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("my trace.json").write_text("kept")
    assert "Error: 'my trace.json' already exists; use --force to overwrite it" in run("trace", "-o", "my trace.json")
    assert Path("my trace.json").read_text() == "kept"


def test_a_class_folder_and_its_output_are_named_in_quotes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("my class").mkdir()
    assert "no .py files match 'my class'" in run("check", "my class:Attn", "--lesson", "causal")
    Path("my class/a.py").write_text("class Attn: pass\n")
    Path("pages out").write_text("a file")
    said = run("check", "my class:Attn", "--lesson", "causal", "--format", "html", "-o", "pages out")
    assert "'pages out' is a file; give a folder" in said
