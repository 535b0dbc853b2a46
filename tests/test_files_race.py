"""Two runs writing the same new folder at once: exactly one wins, the other is told, nothing is mixed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tracer.core import files


def _race(monkeypatch: pytest.MonkeyPatch, out: Path, rival: dict[str, bytes], replace: bool) -> None:
    """Run the rival's whole write right after ours staged its files, before ours is renamed into place."""
    real = files.fsync_folder
    done: list[bool] = []

    def fsync_then_rival(folder: Path) -> None:
        real(folder)
        if not done and folder.name.startswith(f".{out.name}.attn-trace-new-"):
            done.append(True)
            files.write_folder(out, rival, replace, lambda name: name.endswith(".html"))

    monkeypatch.setattr(files, "fsync_folder", fsync_then_rival)


def test_without_force_the_second_writer_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "report"
    _race(monkeypatch, out, {"index.html": b"first"}, False)
    with pytest.raises(FileExistsError):
        files.write_folder(out, {"index.html": b"second"}, False, lambda name: name.endswith(".html"))
    assert (out / "index.html").read_bytes() == b"first"
    assert sorted(os.listdir(tmp_path)) == ["report"]  # no staging folder left behind
    assert sorted(os.listdir(out)) == ["index.html"]


def test_with_force_the_last_writer_wins_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "report"
    _race(monkeypatch, out, {"index.html": b"first", "a.html": b"a"}, True)
    files.write_folder(out, {"index.html": b"second"}, True, lambda name: name.endswith(".html"))
    assert (out / "index.html").read_bytes() == b"second"
    assert sorted(os.listdir(tmp_path)) == ["report"]  # no set-aside folder left behind


def test_two_forced_writers_leave_no_set_aside_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.core import staging

    out = tmp_path / "report"
    files.write_folder(out, {"index.html": b"old"}, True, lambda name: name.endswith(".html"))
    real, done = staging.mark, []

    def mark_then_rival(folder: Path, token: str) -> None:
        real(folder, token)
        if not done and "-old-" in folder.name:  # ours was just set aside: the rival renames its own in now
            done.append(True)
            monkeypatch.setattr(staging, "mark", real)
            files.write_folder(out, {"index.html": b"rival"}, True, lambda name: name.endswith(".html"))

    monkeypatch.setattr(staging, "mark", mark_then_rival)
    with pytest.raises(OSError, match="another run replaced it at the same time"):
        files.write_folder(out, {"index.html": b"ours"}, True, lambda name: name.endswith(".html"))
    assert done and (out / "index.html").read_bytes() == b"rival"
    assert sorted(os.listdir(tmp_path)) == ["report"]  # neither a staging nor a set-aside folder is left
