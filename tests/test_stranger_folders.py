"""Report folders in shared places (issue 24, items 8-11): planted leftovers, mount points, stuck deletes, long names.

Recovery touches only folders this user's attn-trace made (owner and mark);
a mount point is written into; a set-aside report that cannot be deleted is
said; staging names fit whatever the destination's name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.core import files, staging
from tracer.present.report import is_report_file


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _files(n: int) -> dict[str, bytes]:
    return {"index.html": f"<p>{n}</p>".encode(), "index.md": f"# {n}".encode()}


@pytest.mark.parametrize("owner", ["me-without-mark", "someone-else"])
def test_a_planted_staging_folder_is_never_adopted(tmp_path: Path, owner: str) -> None:
    pid = _dead_pid()
    planted = tmp_path / f".out.attn-trace-old-{pid}-aa"
    planted.mkdir()
    (planted / "index.html").write_text("<script>planted</script>")
    if owner == "someone-else":
        (planted / staging.MARK).write_text(f"{pid}-aa")  # a mark, even the right one, in someone else's folder
        if os.geteuid() != 0:
            pytest.skip("only root can give a folder to someone else")  # pragma: no cover
        os.chown(planted, 12345, 12345)
        os.chown(planted / staging.MARK, 12345, 12345)
    out = tmp_path / "out"
    files.write_folder(out, _files(1), False, is_report_file)
    assert (out / "index.html").read_bytes() == b"<p>1</p>"  # not the planted report, and no error
    assert planted.is_dir() and (planted / "index.html").read_text() == "<script>planted</script>"  # left alone
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "index.md"]


def test_a_mount_point_is_written_into(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "volume"
    out.mkdir()
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: os.fspath(p) == os.fspath(out) or real(p))

    def busy(src: object, dst: object) -> None:  # what renaming a mount point gives
        if os.fspath(src) == os.fspath(out) or os.fspath(dst) == os.fspath(out):
            raise OSError(16, "Device or resource busy")
        os.replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "rename", busy)
    files.write_folder(out, _files(1), False, is_report_file)
    files.write_folder(out, _files(2), True, is_report_file)
    assert (out / "index.html").read_bytes() == b"<p>2</p>" and sorted(p.name for p in out.iterdir()) == [
        "index.html",
        "index.md",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["volume"]


def test_an_old_report_that_cannot_be_deleted_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r"
    files.write_folder(out, _files(1), False, is_report_file)
    real = shutil.rmtree

    def stuck(path: object, *a: object, **k: object) -> None:
        if "attn-trace-old" in os.fspath(path):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied")
        real(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(shutil, "rmtree", stuck)
    note = files.write_folder(out, _files(2), True, is_report_file)
    assert note is not None and "could not be deleted" in note and "attn-trace-old" in note
    assert (out / "index.html").read_bytes() == b"<p>2</p>"


@pytest.mark.parametrize("length", [238, 250, 255])
def test_names_up_to_255_bytes_get_staging_names_that_fit(tmp_path: Path, length: int) -> None:
    out = tmp_path / ("r" * length)
    files.write_folder(out, _files(1), False, is_report_file)
    files.write_folder(out, _files(2), True, is_report_file)
    files.write_atomic(tmp_path / ("t" * length), b"x")
    assert (out / "index.html").read_bytes() == b"<p>2</p>" and (tmp_path / ("t" * length)).read_bytes() == b"x"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, "t" * length])
