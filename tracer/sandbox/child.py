"""The child's side of the sandbox: fork, take the child apart from the parent, run the job, send its answer.

:func:`fork` makes the child and returns the parent's ends of its two pipes.
In the child, before the job runs: it leads a process group of its own,
stdin is ``/dev/null``, stdout and stderr (file descriptors 1 and 2, and
``sys.stdout``/``sys.stderr``) go to the output pipe, every other inherited
descriptor is closed (another child's pipes, the parent's selector, a test
runner's files) except its own answer pipe, it works in a fresh temporary
folder, torch runs on one thread (OpenMP's pool does not survive a fork),
and ``RLIMIT_AS`` caps its address space.  The job's answer (a JSON-able
dict) goes back as one length-prefixed frame; even a failure of ours becomes
an answer.  The child never returns: it ends with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import resource
import signal
import struct
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

from tracer.message import Message


def fork(job: Callable[[], dict[str, Any]], timeout: float, memory_mb: float) -> tuple[int, int, int, str]:
    """Start ``job`` in a child; ``(pid, answer pipe, output pipe, working folder)``, pipes non-blocking."""
    workdir = tempfile.mkdtemp(prefix="attn-trace-check-")
    verdict_r, verdict_w = os.pipe()
    output_r, output_w = os.pipe()
    limit = address_limit(memory_mb)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(verdict_r)
        os.close(output_r)
        _child(job, verdict_w, output_w, workdir, limit, timeout)
    os.close(verdict_w)
    os.close(output_w)
    os.set_blocking(verdict_r, False)
    os.set_blocking(output_r, False)
    with contextlib.suppress(OSError):  # the child does it too; whichever runs first closes the race
        os.setpgid(pid, pid)
    return pid, verdict_r, output_r, workdir


def _child(
    job: Callable[[], dict[str, Any]], verdict_w: int, output_w: int, workdir: str, limit: int, timeout: float
) -> None:
    code = 0
    try:
        os.setpgid(0, 0)
        faulthandler.disable()  # it writes to a copy of the parent's stderr (pytest's, PYTHONFAULTHANDLER's)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output_w, 1)
        os.dup2(output_w, 2)
        os.close(output_w)
        # every other descriptor inherited from the parent (other children's pipes, its selector, a test
        # runner's files) is closed: the child keeps its three streams and its own verdict pipe
        os.closerange(3, verdict_w)
        os.closerange(verdict_w + 1, _fd_limit())
        # the child's own streams, kept for its lifetime (a test runner may have replaced sys.stdout)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), "utf-8", "backslashreplace", line_buffering=True)  # noqa: SIM115
        sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), "utf-8", "backslashreplace", line_buffering=True)  # noqa: SIM115
        os.chdir(workdir)
        torch = sys.modules.get("torch")
        if torch is not None:  # the parent's OpenMP pool did not survive the fork: one thread (as DataLoader workers)
            torch.set_num_threads(1)
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.environ["ATTN_TRACE_CHILD"] = str(timeout)
        verdict = job()
        data = json.dumps(verdict, ensure_ascii=True).encode("ascii")
    except BaseException as e:  # even our own failure becomes a verdict the parent can read
        said = Message("trouble.child_failed", error=f"{type(e).__name__}: {e}")
        data = json.dumps({"kind": "trouble", "message": said.to_json(), "details": traceback.format_exc()}).encode(
            "ascii"
        )
        code = 3
    try:
        frame = struct.pack(">Q", len(data)) + data
        view = memoryview(frame)
        while view:
            view = view[os.write(verdict_w, view) :]
        os.close(verdict_w)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    finally:
        os._exit(code)


def _fd_limit() -> int:
    """One past the highest file descriptor this process may have."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if 0 < soft < 1 << 20 else 1 << 16


def address_limit(memory_mb: float) -> int:
    """This process's address space now plus ``memory_mb`` MB, in bytes (0: no limit)."""
    if not memory_mb:
        return 0
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        size = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return int(size + memory_mb * 1024 * 1024)
