"""Files are read only when regular and small enough; reports are written whole or not at all."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.core import files
from tracer.core.staging import MARK
from tracer.present.report import is_report_file


def invoke(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


def test_read_limited_refuses_devices_and_big_files(tmp_path: Path) -> None:
    with pytest.raises(files.NotRegular, match="not a regular file"):
        files.read_limited(Path("/dev/zero"), 100)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(files.NotRegular, match="past the 100-byte limit"):
        files.read_limited(big, 100)
    assert files.read_limited(big, 101) == b"x" * 101


def test_write_atomic_keeps_the_umask_and_gives_open_modes(tmp_path: Path) -> None:
    before = os.umask(0o027)
    try:
        files.write_atomic(tmp_path / "a.json", b"{}")
        assert os.umask(0o027) == 0o027  # unchanged by the write
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_write_atomic_refuses_links(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "nowhere.json")  # dangling
    with pytest.raises(files.Refused, match="symbolic link"):
        files.write_atomic(link, b"x")
    assert link.is_symlink() and not (tmp_path / "nowhere.json").exists()


def _files(n: int) -> dict[str, bytes]:
    return {"index.html": b"<p>%d</p>" % n, "index.md": b"# %d" % n, "fig-a.svg": b"<svg/>"}


def test_write_folder_replaces_whole_and_keeps_other_formats(tmp_path: Path) -> None:
    out = tmp_path / "r"
    files.write_folder(out, _files(1), False, is_report_file)
    with pytest.raises(FileExistsError):
        files.write_folder(out, _files(2), False, is_report_file)
    assert (out / "index.html").read_bytes() == b"<p>1</p>"
    files.write_folder(out, {"index.html": b"<p>3</p>"}, True, is_report_file)
    assert (out / "index.html").read_bytes() == b"<p>3</p>" and (out / "index.md").read_bytes() == b"# 1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # nothing staged or set aside is left


def test_write_folder_refuses_a_folder_of_other_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(files.Refused, match="not part of a report"):
        files.write_folder(tmp_path, _files(1), True, is_report_file)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_failed_write_leaves_the_old_report_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r"
    files.write_folder(out, _files(1), False, is_report_file)
    real = files._write_new
    calls = []

    def full_disk(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(files, "_write_new", full_disk)
    with pytest.raises(OSError, match="No space"):
        files.write_folder(out, _files(2), True, is_report_file)
    assert (out / "index.html").read_bytes() == b"<p>1</p>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_leftovers_of_a_killed_run_are_recognised(tmp_path: Path) -> None:
    out = tmp_path / "r"
    pid = _dead_pid()
    stage = tmp_path / f".r.attn-trace-new-{pid}-abcd"
    stage.mkdir()
    (stage / MARK).write_text(f"{pid}-abcd")  # what a run writes into its staging folder first
    (stage / "index.html").write_text("half")
    aside = tmp_path / f".r.attn-trace-old-{pid}-abcd"  # killed between the two renames
    aside.mkdir()
    (aside / MARK).write_text(f"{pid}-abcd")
    (aside / "index.html").write_text("old")
    (aside / ".fig-a.svg.k2j_x9.tmp").write_text("stray temp of an older attn-trace")
    files.recover(out)
    assert (out / "index.html").read_text() == "old"  # the old report is back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    files.write_folder(out, _files(4), True, is_report_file)  # the stray temp file is not "someone's file"
    assert (out / "index.html").read_bytes() == b"<p>4</p>"


def test_a_live_run_s_staging_folder_is_left_alone(tmp_path: Path) -> None:
    live = tmp_path / f".r.attn-trace-new-{os.getpid()}-abcd"
    live.mkdir()
    files.recover(tmp_path / "r")
    assert live.is_dir()


def test_report_cli_rules_for_slashes_and_links(tmp_path: Path) -> None:
    res = invoke("trace", "-o", str(tmp_path / "newdir") + "/")
    assert res.exit_code == 2 and "is a folder" in res.output and not (tmp_path / "newdir").exists()
    link = tmp_path / "t.json"
    link.symlink_to(tmp_path / "gone.json")
    res = invoke("trace", "-o", str(link), "--force")
    assert res.exit_code == 2 and "symbolic link" in res.output and link.is_symlink()
    folder_link = tmp_path / "rep"
    folder_link.symlink_to(tmp_path / "elsewhere")
    res = invoke("report", "--format", "md", "-o", str(folder_link))
    assert res.exit_code == 2 and "symbolic link" in res.output and not (tmp_path / "elsewhere").exists()
    res = invoke("report", "--format", "md", "-o", str(tmp_path / "new") + "/")
    assert res.exit_code == 0 and (tmp_path / "new" / "index.md").is_file()


def test_report_killed_midway_then_rerun_without_force(tmp_path: Path) -> None:
    pid = _dead_pid()
    stage = tmp_path / f".r.attn-trace-new-{pid}-0f0f"
    stage.mkdir()
    (stage / MARK).write_text(f"{pid}-0f0f")
    (stage / "index.md").write_text("half")
    res = invoke("report", "--format", "md", "-o", str(tmp_path / "r"))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_the_current_folder_is_never_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(files.Refused, match="current folder"):
        files.write_folder(Path("."), _files(1), True, is_report_file)
    with pytest.raises(files.Refused, match="current folder"):
        files.write_folder(tmp_path.parent, _files(1), True, is_report_file)
    files.write_folder(Path("sub"), _files(1), False, is_report_file)  # a folder below it is fine
    assert (tmp_path / "sub" / "index.md").is_file()
