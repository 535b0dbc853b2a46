"""Where attn-trace writes is chosen by the command line, never by a file from someone else (issue 24).

A trace's ``meta.lesson`` becomes at most one plain folder-name part; ``-o``
onto a device or a named pipe writes into it and never replaces it.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tracer
from tests.hostile import seal
from tracer.cli import app
from tracer.core import serialize
from tracer.present import narrative
from tracer.present.report import slug


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.mark.parametrize("lesson", ["/abs/where/site", "../../outside", "a/../../b", "..", "x\\..\\y", ""])
def test_meta_lesson_never_becomes_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lesson: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    doc = serialize.to_dict(tracer.trace_lesson("trainable"))
    doc["meta"]["narrative"] = {g: narrative.load("trainable", g).to_dict() for g in ("en", "zh")}
    doc["meta"]["lesson"] = lesson
    doc["meta"]["source"] = {"kind": "file", "name": "mine.json"}
    (work / "evil.json").write_text(seal(doc), encoding="utf-8")
    name = slug(serialize.loads(seal(doc)))
    assert name == name.strip(".") and "/" not in name and "\\" not in name and ".." not in name
    r = _run("report", "--from", "evil.json", "--format", "md", "--force")
    assert r.exit_code == 0, r.output
    written = [p for p in tmp_path.rglob("index.md")]
    assert [p.parent.parent.parent for p in written] == [work / "reports"]


def test_force_writes_into_a_named_pipe_and_keeps_it_a_pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    r = _run("trace", "-o", "pipe", "--force")
    reader.join(timeout=30)
    if reader.is_alive():  # nothing was written into the pipe: release the reader
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert r.exit_code == 0, r.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert serialize.loads(got[0].decode("utf-8")).meta["lesson"] == "simple"


def test_a_device_is_written_into_never_replaced(tmp_path: Path) -> None:
    if os.geteuid() != 0:  # only root can make a device node; /dev/null itself is the same kind
        dev = Path(os.devnull)
    else:
        dev = tmp_path / "null"
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    before = os.stat(dev)
    for extra in ([], ["--force"]):
        r = _run("trace", "-o", str(dev), *extra)
        assert r.exit_code == 0, r.output
        after = os.stat(dev)
        assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino and after.st_rdev == before.st_rdev


def test_a_socket_is_refused(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        r = CliRunner().invoke(app, ["trace", "-o", str(path), "--force"])
    assert r.exit_code == 2 and "socket" in r.output
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
