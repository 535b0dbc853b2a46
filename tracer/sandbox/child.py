"""The child's side of the sandbox: forked by the launcher, set apart, it runs one task and sends its answer.

:func:`run_task` runs in a child the launcher (:mod:`tracer.sandbox.zygote`)
forked.  Before the task's code runs it leads a session of its own, stdin
is ``/dev/null``, stdout and stderr (descriptors 1 and 2, and
``sys.stdout``/``sys.stderr``) go to the output pipe, descriptor 3 is its
answer pipe and every other descriptor is closed, it works in a fresh
folder (``PWD`` says so), and ``RLIMIT_AS`` caps its address space (its
size now plus the task's megabytes).  The answer (a JSON-able dict) goes
back as one length-prefixed frame; even a failure of ours becomes an
answer.  The child never returns: it ends with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import resource
import struct
import sys
import traceback
from typing import Any

from tracer.message import Message

ANSWER_FD = 3

PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
"""``prctl`` options (``linux/prctl.h``)."""


def run_task(task: dict[str, Any], answer: int, output: int, workdir: str) -> None:
    """Run ``task`` (``{"target", "kwargs", "path", "timeout", "memory"}``); never returns."""
    code = 0
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.dup2(answer, ANSWER_FD)
        os.closerange(ANSWER_FD + 1, _fd_limit())
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), "utf-8", "backslashreplace", line_buffering=True)  # noqa: SIM115
        sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), "utf-8", "backslashreplace", line_buffering=True)  # noqa: SIM115
        os.chdir(workdir)
        os.environ["PWD"] = workdir
        os.environ["ATTN_TRACE_CHILD"] = repr(float(task.get("timeout") or 0))
        sys.path[:0] = [str(p) for p in task.get("path") or []]
        run = named(str(task["target"]))
        limit = address_limit(float(task.get("memory") or 0))
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        data = json.dumps(run(**task.get("kwargs", {})), ensure_ascii=True).encode("ascii")
    except BaseException as e:  # even our own failure becomes an answer the parent can read
        said = Message("trouble.child_failed", error=f"{type(e).__name__}: {e}")
        data = json.dumps({"kind": "trouble", "message": said.to_json(), "details": traceback.format_exc()}).encode(
            "ascii"
        )
        code = 3
    try:
        frame = struct.pack(">Q", len(data)) + data
        view = memoryview(frame)
        while view:
            view = view[os.write(ANSWER_FD, view) :]
        os.close(ANSWER_FD)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    finally:
        os._exit(code)


def undumpable() -> int:
    """Make this process non-dumpable (Linux ``prctl``): no process without ``CAP_SYS_PTRACE`` can trace it.

    Returns the flag it had (-1 where ``prctl`` is missing).  Best effort:
    elsewhere nothing changes.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        before = int(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
        if before >= 0:
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        return before
    except (OSError, AttributeError):
        return -1


def named(target: str) -> Any:
    """The function ``module:function`` names."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


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
