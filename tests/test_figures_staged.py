"""``attn-trace figures`` writes its folder whole or not at all, and a bad matplotlib setting is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.core import files


def test_a_run_killed_while_writing_leaves_nothing_and_the_rerun_needs_no_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "slides"
    real, written = files._write_new, []

    def dies_on_the_third(path: Path, data: bytes) -> None:
        if len(written) == 2:
            raise KeyboardInterrupt  # as a kill would: in the middle of the folder
        written.append(path)
        real(path, data)

    monkeypatch.setattr(files, "_write_new", dies_on_the_third)
    res = CliRunner().invoke(app, ["figures", "--format", "svg", "-o", str(out)])
    assert res.exit_code != 0 and len(written) == 2
    assert os.listdir(tmp_path) == []  # neither two of the six figures, nor a hidden temporary file
    monkeypatch.setattr(files, "_write_new", real)
    res = CliRunner().invoke(app, ["figures", "--format", "svg", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert len(list(out.glob("fig-*.svg"))) == 6 and not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_folder_with_other_files_is_refused_untouched(tmp_path: Path) -> None:
    (tmp_path / "talk.key").write_bytes(b"slides")
    res = CliRunner().invoke(app, ["figures", "--format", "svg", "-o", str(tmp_path)])
    assert res.exit_code == 2 and "talk.key" in res.stderr
    assert os.listdir(tmp_path) == ["talk.key"]


def test_a_bogus_backend_is_one_line() -> None:
    env = dict(os.environ, MPLBACKEND="bogus")
    done = subprocess.run(
        [sys.executable, "-m", "tracer", "figures", "-o", "never"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "matplotlib cannot start" in done.stderr and "'bogus'" in done.stderr and not os.path.exists("never")
