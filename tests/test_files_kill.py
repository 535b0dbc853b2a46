"""kill -9 during ``report --force``: the folder holds the old report or the new one, whole; the next run cleans up.

A report is written into a staging folder, the old folder is set aside, the
staging folder is renamed into place and the old one deleted
(:func:`tracer.core.files.write_folder`).  Each test runs ``report --force``
in a subprocess that kills itself with SIGKILL at one known point of that
sequence (just before the Nth call of a file operation, counted in the
process itself): nothing here depends on timing.  Between the two renames
the folder is briefly missing; the next run puts the old report back before
it writes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

KILLER = """
import os, shutil, signal, sys
from tracer.core import files

point, nth = sys.argv[1], int(sys.argv[2])
seen = {"write": 0, "rename": 0, "rmtree": 0}


def hit(kind, *paths):
    if kind != "write" and not any(".attn-trace-" in str(p) for p in paths):
        return  # only the renames and deletions of the report's own folders count
    seen[kind] += 1
    if kind == point and seen[kind] == nth:
        os.kill(os.getpid(), signal.SIGKILL)


def wrap(kind, real):
    def call(*args, **kwargs):
        hit(kind, *args)
        return real(*args, **kwargs)
    return call


files._write_new = wrap("write", files._write_new)
os.rename = wrap("rename", os.rename)
shutil.rmtree = wrap("rmtree", shutil.rmtree)
sys.argv = ["attn-trace", *sys.argv[3:]]
from tracer.cli import main

main()
"""

# (where it dies, what the folder holds then: "old", "new" or None for missing)
POINTS = [
    (("write", 3), "old"),  # while the new files are staged
    (("rename", 1), "old"),  # staged and flushed, the old folder not yet set aside
    (("rename", 2), None),  # the old folder set aside, the new one not yet in its place
    (("rmtree", 1), "new"),  # the new folder in place, the old one not yet deleted
]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved trace, and beside it its report with 3 decimals ("old") and with 4 ("new")."""
    path = tmp_path_factory.mktemp("kill") / "trace.json"
    done = subprocess.run([sys.executable, "-m", "tracer", "trace", "-o", str(path)], cwd=ROOT, env=_env())
    assert done.returncode == 0
    for decimals, name in ((3, "old"), (4, "new")):  # the two reports differ in every printed number
        cmd = [sys.executable, "-m", "tracer", *_report(path.parent / name, path, decimals)]
        assert subprocess.run(cmd, cwd=ROOT, env=_env()).returncode == 0
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _report(out: Path, saved: Path, decimals: int) -> list[str]:
    return ["report", "--from", str(saved), "--format", "md", "--decimals", str(decimals), "--force", "-o", str(out)]


def _read(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize(("point", "holds"), POINTS, ids=[f"{k}{n}" for (k, n), _ in POINTS])
def test_kill_9_leaves_a_whole_report_and_the_next_run_cleans_up(
    tmp_path: Path, saved: Path, point: tuple[str, int], holds: str | None
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    out = work / "r"
    cli = [sys.executable, "-m", "tracer"]
    old, new = _read(saved.parent / "old"), _read(saved.parent / "new")
    assert old != new and old.keys() == new.keys()
    assert subprocess.run([*cli, *_report(out, saved, 3)], cwd=ROOT, env=_env()).returncode == 0
    assert _read(out) == old

    kind, nth = point
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, kind, str(nth), *_report(out, saved, 4)], cwd=ROOT, env=_env()
    )
    assert killed.returncode == -signal.SIGKILL  # it died at that point, not before and not after
    left = sorted(p.name for p in work.iterdir() if p.name != "r")
    assert left and all(n.startswith(".r.attn-trace-") for n in left), left
    if holds is None:
        assert not out.exists()
    else:
        assert _read(out) == (old if holds == "old" else new)  # whole: never a mixture of the two

    again = subprocess.run([*cli, *_report(out, saved, 4)], cwd=ROOT, env=_env(), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert _read(out) == new
    assert sorted(p.name for p in work.iterdir()) == ["r"]  # the killed run's leftovers are gone


def test_without_force_the_next_run_after_a_kill_between_the_renames_finds_the_old_report(
    tmp_path: Path, saved: Path
) -> None:
    """The set-aside report is put back first, so a run without --force refuses to overwrite it."""
    out = tmp_path / "r"
    cli = [sys.executable, "-m", "tracer"]
    assert subprocess.run([*cli, *_report(out, saved, 3)], cwd=ROOT, env=_env()).returncode == 0
    old = _read(out)
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, "rename", "2", *_report(out, saved, 4)], cwd=ROOT, env=_env()
    )
    assert killed.returncode == -signal.SIGKILL and not out.exists()
    args = [a for a in _report(out, saved, 4) if a != "--force"]
    again = subprocess.run([*cli, *args], cwd=ROOT, env=_env(), capture_output=True, text=True)
    assert again.returncode == 2 and "already exists" in again.stderr and again.stderr.count("\n") == 1
    assert _read(out) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
