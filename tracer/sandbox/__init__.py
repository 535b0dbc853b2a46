"""Run untrusted code in a forked child: its output captured, its limits enforced from outside, its answer received.

``attn-trace check`` runs a student's code.  Inside the checker's own
process that code could print into the JSON on stdout, move the working
directory under ``-o``, swallow the time limit with a bare ``except:``,
keep the process alive with a thread, or end it with ``os._exit(0)`` before
anything was checked.  So each job runs in a child made by :func:`os.fork`
(after torch is imported: a child starts in milliseconds), set apart from
the parent as :mod:`tracer.sandbox.child` describes (its own output pipe,
folder, process group and address-space limit; no inherited descriptors).
Here, the parent's side:

- :func:`pool` runs ``workers`` children at once, reads their output (up to
  :data:`OUTPUT_CAP` bytes, never to the parent's output) and their answer,
  and kills a child's process group with ``SIGKILL`` once ``timeout``
  seconds have passed and in any case once the child is done (a process it
  forked goes with it);
- it trusts only a complete length-prefixed JSON frame: a child that exits
  without one (``os._exit``, a crash, a signal, the memory limit) is *no
  verdict*, with the reason;
- the parent is non-dumpable while children run (:func:`_undumpable`).

The answer is *data*: :mod:`tracer.checking` has the child send what the
student's code computed and judges it here, so a frame the student's code
forges can claim values but not a verdict (``docs/security.md``).  This is
not a sandbox with a trust boundary: the child runs as the teacher's user
(another user, a container are).  POSIX only (``fork``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tracer.message import Message
from tracer.sandbox.child import fork

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
    failure: Message | None  # None when a verdict came; otherwise why not, as a message (keys no_verdict.*)
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
                new = _start(job, timeout, memory_mb)
                folders.append(new.workdir)
                live[new.pid] = (index, new)
                sel.register(new.verdict_fd, selectors.EVENT_READ, (new, "verdict"))
                sel.register(new.output_fd, selectors.EVENT_READ, (new, "output"))
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


def _start(job: Callable[[], dict[str, Any]], timeout: float, memory_mb: float) -> _Child:
    pid, verdict_r, output_r, workdir = fork(job, timeout, memory_mb)
    return _Child(pid, verdict_r, output_r, time.monotonic(), workdir, bytearray(), bytearray())


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
        return Outcome(verdict, output, None, seconds, memory_mb)
    if child.killed_for_time:
        why = Message("no_verdict.overtime", seconds=timeout)
    elif os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        memory = name == "SIGKILL"
        why = (
            Message("no_verdict.killed_memory", signal=name, limit=memory_mb)
            if memory
            else Message("no_verdict.killed", signal=name)
        )
    else:
        why = Message("no_verdict.exited", status=os.WEXITSTATUS(status))
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
