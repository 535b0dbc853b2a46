"""Jobs the sandbox tests run in a child (:class:`tracer.sandbox.Task` names them as ``tests.sandbox_jobs:NAME``)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import time
from pathlib import Path

from tracer import sandbox

ROOT = str(Path(__file__).resolve().parent.parent)


def task(name: str, **kwargs: object) -> sandbox.Task:
    """The task that runs ``NAME(**kwargs)`` of this module in a child."""
    return sandbox.Task(f"tests.sandbox_jobs:{name}", dict(kwargs), path=(ROOT,))


def ok() -> dict[str, object]:
    return {"kind": "verdict", "n": 1}


def leaves() -> dict[str, object]:
    os._exit(0)


def prints() -> dict[str, object]:
    print("hello from the child")
    return {"kind": "verdict", "n": 2}


def floods() -> dict[str, object]:
    os.write(1, b"x" * (sandbox.OUTPUT_CAP + 5000))
    return {"kind": "verdict"}


def sleeps() -> dict[str, object]:
    time.sleep(1.0)
    return {"kind": "data"}


def fifos() -> dict[str, object]:
    """The pipes this child holds, and whether it can be traced."""
    pipes = []
    for fd in (int(fd) for fd in os.listdir("/proc/self/fd")):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                pipes.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    libc = ctypes.CDLL(None)
    return {"kind": "data", "pipes": sorted(set(pipes)), "dumpable": libc.prctl(sandbox.PR_GET_DUMPABLE, 0, 0, 0, 0)}


def sees() -> dict[str, object]:
    """What a child can learn of where it runs: its folder, environment, and every process's arguments."""
    cmdlines = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                cmdlines.append(Path(f"/proc/{name}/cmdline").read_bytes().decode("utf-8", "replace"))
    return {"kind": "data", "cwd": os.getcwd(), "env": dict(os.environ), "cmdlines": cmdlines, "ppid": os.getppid()}
