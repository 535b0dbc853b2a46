"""A single-file write killed before its rename leaves a temporary file that the next write of that file removes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tracer.core.files import write_atomic


def test_a_killed_write_leaves_a_temp_the_next_write_cleans(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    code = (
        "import sys, time; from pathlib import Path; import tracer.core.files as f\n"
        "real = f._write_new\n"
        "def slow(p, d):\n"
        "    real(p, d); print('written', flush=True); time.sleep(60)\n"
        "f._write_new = slow\n"
        "f.write_atomic(Path(sys.argv[1]), b'new')\n"
    )
    with subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "written\n"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".out.json.") and left[0].endswith(".tmp") and not out.exists()
    write_atomic(out, b"again")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"] and out.read_bytes() == b"again"


def test_a_write_in_progress_is_left_alone(tmp_path: Path) -> None:
    running = tmp_path / f".out.json.{os.getppid()}-abc123.tmp"  # a process that runs: the test's parent
    running.write_bytes(b"half")
    gone = tmp_path / ".out.json.999999999-abc123.tmp"
    gone.write_bytes(b"half")
    write_atomic(tmp_path / "out.json", b"x")
    assert running.exists() and not gone.exists()
