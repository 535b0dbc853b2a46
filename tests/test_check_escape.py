"""Nothing a submission starts outlives its verdict, and nothing it can read names the teacher's outputs.

Real processes: ``attn-trace check`` runs as a program on
``check_attack/escapes.py``, whose forward leaves a grandchild in a session of
its own that ignores the polite signals, reads every process's ``-o`` and
tries to rewrite the results after the check.  Each test runs under both
mechanisms: the subreaper alone (``ATTN_TRACE_BWRAP=0``) and, where
bubblewrap works, its PID namespace.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracer.sandbox import procs

ESCAPES = Path(__file__).parent / "check_attack" / "escapes.py"
DELAY = 1.0  # seconds the escapee waits before it writes

MODES = [
    pytest.param("0", id="subreaper"),
    pytest.param(
        "1", id="namespace", marks=pytest.mark.skipif(procs.bubblewrap() is None, reason="bubblewrap cannot run here")
    ),
]


def _env(tmp_path: Path, bwrap: str, token: str, **more: str) -> dict[str, str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = dict(os.environ, ATTN_TRACE_BWRAP=bwrap, TMPDIR=str(tmp_path / "tmp"), ESCAPE_TOKEN=token)
    env.update(ESCAPE_MARK=str(tmp_path / "mark"), ESCAPE_DELAY=str(DELAY), **more)
    return env


def _alive(token: str) -> list[int]:
    """Processes named ``token`` (``/proc/PID/comm``), zombies excluded."""
    found = []
    for name in os.listdir("/proc"):
        try:
            comm = Path(f"/proc/{name}/comm").read_text().strip()
            state = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if comm == token and state != "Z":
            found.append(int(name))
    return found


def _check(out: Path, *more: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tracer",
        "check",
        f"{ESCAPES}:CausalAttention",
        "--lesson",
        "causal",
        "-o",
        str(out),
        *more,
    ]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux's /proc")
@pytest.mark.parametrize("bwrap", MODES)
def test_a_setsid_grandchild_dies_before_the_verdict_and_cannot_rewrite_it(tmp_path: Path, bwrap: str) -> None:
    token = "esc" + secrets.token_hex(5)
    out = tmp_path / "results.json"
    cmd = _check(out, "--format", "gradescope", "--verbose")
    done = subprocess.run(cmd, env=_env(tmp_path, bwrap, token), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "escapee running" in done.stderr  # it did start
    assert _alive(token) == []  # and is gone as check returns
    written = out.read_bytes()
    assert json.loads(written)["score"] > 0 and b"99" not in written
    time.sleep(DELAY + 0.5)
    assert out.read_bytes() == written and not (tmp_path / "mark.late").exists()
    if bwrap == "0":  # it could write where it wanted, so it ran as the test says, and was killed
        assert (tmp_path / "mark.pid").exists()
    else:  # in its namespace the file system is read-only
        assert not (tmp_path / "mark.pid").exists()
    assert list((tmp_path / "tmp").iterdir()) == []  # the launcher's folder went with it


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux's /proc")
@pytest.mark.parametrize("bwrap", MODES)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_signal_to_the_checker_ends_every_process_and_folder(tmp_path: Path, bwrap: str, sig: int) -> None:
    token = "esc" + secrets.token_hex(5)
    out = tmp_path / "results.json"
    env = _env(tmp_path, bwrap, token, ESCAPE_HANG="1")
    with subprocess.Popen(_check(out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        deadline = time.monotonic() + 120
        while not _alive(token):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert _alive(token) == [] and not out.exists()
    assert list((tmp_path / "tmp").iterdir()) == []
    time.sleep(DELAY + 0.5)
    assert not (tmp_path / "mark.late").exists()


def test_a_child_learns_nothing_of_the_teachers_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer import sandbox

    from .sandbox_jobs import task

    secret = tmp_path / "teacher-out-3f9c"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OLDPWD", str(secret))
    got = sandbox.run(task("sees"), 30, 0).verdict
    assert got is not None
    assert "teacher-out-3f9c" not in json.dumps(got) and str(tmp_path) not in json.dumps(got["env"])
    assert not got["cwd"].startswith(str(tmp_path))
    if procs.bubblewrap() is not None:  # its own PID namespace: the checker is not among what it sees
        assert not any("pytest" in c for c in got["cmdlines"])
