"""Run untrusted code in a forked child: its output captured, its limits enforced from outside, its verdict received.

``attn-trace check`` runs a student's code.  Inside the checker's own
process that code could print into the JSON on stdout, move the working
directory under ``-o``, swallow the time limit with a bare ``except:``,
keep the process alive with a thread, or end it with ``os._exit(0)`` before
anything was checked.  So each check runs in a child made by
:func:`os.fork` (after torch is imported: a child starts in milliseconds):

- torch runs on one thread in it (OpenMP's thread pool does not survive a
  fork: a parallel op would wait forever for the parent's threads);
- its stdin is ``/dev/null``; its stdout and stderr (file descriptors 1 and
  2, and ``sys.stdout``/``sys.stderr``) go to a pipe the parent reads, up to
  :data:`OUTPUT_CAP` bytes, never to the parent's output;
- it works in a fresh temporary folder of its own (the parent never changes
  folder, so the teacher's ``-o`` stays where it was given);
- its address space is limited with ``RLIMIT_AS`` to what the checker already
  uses plus ``memory`` MB, and it leads a process group of its own, which the
  parent kills with ``SIGKILL`` once ``timeout`` seconds have passed and in
  any case once the child is done (a process it forked goes with it);
- it sends its verdict as one length-prefixed JSON frame on a pipe of its
  own, then ends with ``os._exit``.  The parent trusts only a complete frame:
  a child that exits without one (``os._exit``, a crash, a signal, the
  memory limit) is *no verdict*, with the reason.

The child runs the student's code in the same process as the code that
judges it, so this isolates accidents and ordinary hostility (printing,
``chdir``, endless loops, ``os._exit``, forks, runaway memory), not a
program written to forge the checker's verdict: that needs a sandbox with a
trust boundary (another user, a container).  POSIX only (``fork``).
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import resource
import selectors
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

OUTPUT_CAP = 256 * 1024
"""Bytes of the child's stdout and stderr kept; the rest is read and dropped (the child never blocks on it)."""

VERDICT_CAP = 64 * 1024 * 1024
"""The largest verdict frame accepted (a check's JSON, text and HTML page are far smaller)."""

POLL = 0.1
"""Seconds between looks at children whose pipes stay open (a process they forked holds them)."""

GRACE = 1.0
"""Seconds past ``timeout`` before the kill: the child's own alarm gets the first chance to end it politely."""


PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
"""``prctl`` options (``linux/prctl.h``)."""


@dataclass
class Outcome:
    """What came back from one child: its verdict (or None), its captured output, and why there is no verdict."""

    verdict: dict[str, Any] | None
    output: str
    failure: str  # "" when a verdict came; otherwise why not, in words
    seconds: float
    memory: float = 0.0  # the memory limit it ran with, in MB (0: none)


@dataclass
class _Child:
    pid: int
    verdict_fd: int
    output_fd: int
    started: float
    workdir: str
    frame: bytearray
    output: bytearray
    dropped: int = 0
    killed_for_time: bool = False
    open_fds: int = 2
    status: int | None = None  # the wait status, once the child has ended

    def done(self) -> bool:
        """True once the verdict is whole, the child has ended, or both pipes are closed."""
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            self.status = status if pid else None
        return _frame(bytes(self.frame)) is not None or self.status is not None or self.open_fds == 0


def usable() -> bool:
    """True where children can be forked (POSIX)."""
    return hasattr(os, "fork")


def run(job: Callable[[], dict[str, Any]], timeout: float, memory_mb: float) -> Outcome:
    """Run ``job()`` in a child with the limits; its returned dict (JSON-able) is the verdict."""
    return next(iter(pool([job], 1, timeout, memory_mb)))[1]


def pool(
    jobs: Iterable[Callable[[], dict[str, Any]]], workers: int, timeout: float, memory_mb: float
) -> Iterator[tuple[int, Outcome]]:
    """Run each job in its own child, ``workers`` at a time; yields ``(index, outcome)`` as children finish.

    ``timeout`` is wall-clock seconds per child (0: none); ``memory_mb`` the
    address space each may add to the checker's (0: no limit).
    """
    todo = list(enumerate(jobs))
    todo.reverse()
    live: dict[int, tuple[int, _Child]] = {}
    folders: list[str] = []  # removed at the end: right after a kill, removing one can take a tenth of a second
    sel = selectors.DefaultSelector()
    guard = _undumpable()
    try:
        while todo or live:
            while todo and len(live) < max(1, workers):
                index, job = todo.pop()
                others = [fd for _, c in live.values() for fd in (c.verdict_fd, c.output_fd)] + [sel.fileno()]
                child = _start(job, timeout, memory_mb, others)
                folders.append(child.workdir)
                live[child.pid] = (index, child)
                sel.register(child.verdict_fd, selectors.EVENT_READ, (child, "verdict"))
                sel.register(child.output_fd, selectors.EVENT_READ, (child, "output"))
            wait = _next_deadline(live.values(), timeout)
            for key, _ in sel.select(wait):
                child, which = key.data
                _read(sel, child, which)
            now = time.monotonic()
            for pid, (index, child) in list(live.items()):
                late = timeout and now - child.started > timeout + GRACE
                if late and not child.killed_for_time:
                    child.killed_for_time = True
                    _kill(child.pid)
                if child.killed_for_time or child.done():
                    _drain(sel, child)  # what it wrote before it ended may still sit in the pipes
                    for fd in (child.verdict_fd, child.output_fd):
                        with contextlib.suppress(KeyError, ValueError):
                            sel.unregister(fd)
                        with contextlib.suppress(OSError):
                            os.close(fd)
                    del live[pid]
                    yield index, _finish(child, timeout, memory_mb)
    finally:
        for _, child in live.values():
            _kill(child.pid)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        sel.close()
        guard()


def _undumpable() -> Callable[[], None]:
    """Make this process non-dumpable while children run; returns what restores it.

    A process of the same user may otherwise attach to the checker with
    ``ptrace`` or write its memory through ``/proc/PID/mem``, and change the
    verdict there; a non-dumpable process refuses both (without
    ``CAP_SYS_PTRACE``).  Linux only, best effort: elsewhere nothing changes.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        before = libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
        if before < 0 or libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            return lambda: None
    except (OSError, AttributeError):
        return lambda: None
    return lambda: libc.prctl(PR_SET_DUMPABLE, before, 0, 0, 0) and None


def _next_deadline(live: Iterable[tuple[int, _Child]], timeout: float) -> float | None:
    if not timeout:
        return POLL
    now = time.monotonic()
    return min(POLL, max(0.0, min(c.started + timeout + GRACE - now for _, c in live)) + 0.01)


def _drain(sel: selectors.BaseSelector, child: _Child) -> None:
    for which, fd in (("verdict", child.verdict_fd), ("output", child.output_fd)):
        while fd in sel.get_map() and _read(sel, child, which):
            pass


def _read(sel: selectors.BaseSelector, child: _Child, which: str) -> bool:
    """Read what one pipe has (it never blocks); False when nothing more is there for now."""
    fd = child.verdict_fd if which == "verdict" else child.output_fd
    try:
        data = os.read(fd, 65536)
    except BlockingIOError:
        return False
    except OSError:
        data = b""
    if not data:
        sel.unregister(fd)
        child.open_fds -= 1
        return False
    if which == "verdict":
        if len(child.frame) < VERDICT_CAP + 8:
            child.frame += data
    else:
        keep = max(0, OUTPUT_CAP - len(child.output))
        child.output += data[:keep]
        child.dropped += len(data) - len(data[:keep])
    return True


def _start(job: Callable[[], dict[str, Any]], timeout: float, memory_mb: float, others: list[int]) -> _Child:
    workdir = tempfile.mkdtemp(prefix="attn-trace-check-")
    verdict_r, verdict_w = os.pipe()
    output_r, output_w = os.pipe()
    limit = _address_limit(memory_mb)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        for fd in (verdict_r, output_r, *others):  # the other children's pipes are theirs: not to be read
            with contextlib.suppress(OSError):
                os.close(fd)
        _child(job, verdict_w, output_w, workdir, limit, timeout)
    os.close(verdict_w)
    os.close(output_w)
    os.set_blocking(verdict_r, False)
    os.set_blocking(output_r, False)
    with contextlib.suppress(OSError):  # the child does it too; whichever runs first closes the race
        os.setpgid(pid, pid)
    return _Child(pid, verdict_r, output_r, time.monotonic(), workdir, bytearray(), bytearray())


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
        data = json.dumps(
            {
                "kind": "trouble",
                "message": f"internal error in the checker's child: {type(e).__name__}: {e}",
                "details": traceback.format_exc(),
            }
        ).encode("ascii")
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


def _address_limit(memory_mb: float) -> int:
    """This process's address space now plus ``memory_mb`` MB, in bytes (0: no limit)."""
    if not memory_mb:
        return 0
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        size = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return int(size + memory_mb * 1024 * 1024)


def _kill(pid: int) -> None:
    """SIGKILL the child's process group (itself and whatever it forked), or the child alone before it led one."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _finish(child: _Child, timeout: float, memory_mb: float) -> Outcome:
    if child.status is None:
        _kill(child.pid)
    else:  # ended and reaped: its pid may be reused, only its group (whatever it forked) is left to kill
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
    status = child.status if child.status is not None else os.waitpid(child.pid, 0)[1]
    seconds = time.monotonic() - child.started
    output = child.output.decode("utf-8", "replace")
    if child.dropped:
        output += f"\n[... {child.dropped} more bytes of output dropped]\n"
    verdict = _frame(bytes(child.frame))
    if verdict is not None:
        return Outcome(verdict, output, "", seconds, memory_mb)
    if child.killed_for_time:
        why = f"did not finish within {timeout:g} s and was killed (an endless loop?)"
    elif os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        why = f"was killed by {name}" + (
            f" (out of memory? the limit is {memory_mb:g} MB)" if name == "SIGKILL" else ""
        )
    else:
        why = f"exited with status {os.WEXITSTATUS(status)} before sending its verdict (os._exit or sys.exit?)"
    return Outcome(None, output, why, seconds, memory_mb)


def _frame(data: bytes) -> dict[str, Any] | None:
    if len(data) < 8:
        return None
    (size,) = struct.unpack(">Q", data[:8])
    if size != len(data) - 8:
        return None
    try:
        got = json.loads(data[8:].decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return got if isinstance(got, dict) else None
