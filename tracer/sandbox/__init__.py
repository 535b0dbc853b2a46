"""Run untrusted code in a child process: its output captured, its limits enforced from outside, its answer received.

``attn-trace check`` runs a student's code.  Inside the checker's own
process that code could print into the JSON on stdout, move the working
directory under ``-o``, swallow the time limit with a bare ``except:``,
keep the process alive with a thread, or end it with ``os._exit(0)`` before
anything was checked.  So each job (a :class:`Task`) runs in a fresh Python
process (:mod:`tracer.sandbox.spawn`, :mod:`tracer.sandbox.child`: its own
output pipe, folder, session and address-space limit; nothing of the
teacher's paths).  Here, the parent's side:

- :func:`pool` runs ``workers`` children at once, reads their output (up to
  :data:`OUTPUT_CAP` bytes, never to the parent's output) and their answer,
  and kills a child once ``timeout`` seconds have passed;
- no process a child started outlives it: the checker is the subreaper of
  every process below it, and once a child is done its whole tree is
  killed and reaped (:mod:`tracer.sandbox.procs`) before its outcome is
  handed on; under bubblewrap each child also has a PID namespace of its
  own, which the kernel empties when the child ends;
- SIGTERM and SIGHUP end the pool as Ctrl-C does: every child's tree is
  killed and reaped and the working folders removed, then the checker exits
  with ``128 + signal``;
- it trusts only a complete length-prefixed JSON frame: a child that exits
  without one (``os._exit``, a crash, a signal, the memory limit) is *no
  verdict*, with the reason;
- the parent is non-dumpable while children run (:func:`_undumpable`), and
  its own command line reads ``attn-trace check`` to other processes.

The answer is *data*: :mod:`tracer.checking` has the child send what the
student's code computed and judges it here, so a frame the student's code
forges can claim values but not a verdict (``docs/security.md``).  The
child runs as the teacher's user (another user, a container are a trust
boundary).  POSIX only.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tracer.message import Message
from tracer.sandbox import procs, spawn
from tracer.sandbox.child import PR_GET_DUMPABLE, PR_SET_DUMPABLE
from tracer.sandbox.spawn import Launcher, Task, namespaced

__all__ = ["OUTPUT_CAP", "PR_GET_DUMPABLE", "Outcome", "Task", "namespaced", "pool", "run", "usable"]

OUTPUT_CAP = 256 * 1024
"""Bytes of the child's stdout and stderr kept; the rest is read and dropped (the child never blocks on it)."""

VERDICT_CAP = 64 * 1024 * 1024
"""The largest verdict frame accepted (a check's JSON, text and HTML page are far smaller)."""

POLL = 0.1
"""Seconds between looks at children whose pipes stay open (a process they forked holds them)."""

GRACE = 1.0
"""Seconds past ``timeout`` before the kill: the child's own alarm gets the first chance to end it politely."""

STARTUP = 180.0
"""Seconds the launcher may take to start (it imports torch once); past them its children are no verdict."""

ANSWER_WAIT = 5.0
"""Seconds the launcher may take to report a child's end once asked; past them it is stopped, tree and all."""

_IDS = itertools.count(1)


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
    ident: int
    index: int
    launcher: Launcher
    prepare: str
    verdict_fd: int
    output_fd: int
    asked: float  # when the launcher was asked for it
    started: float | None = None  # when the launcher said it runs
    workdir: str = ""
    frame: bytearray = field(default_factory=bytearray)
    output: bytearray = field(default_factory=bytearray)
    dropped: int = 0
    killed_for_time: bool = False
    ended_at: float | None = None  # when its end was asked for
    open_fds: int = 2
    status: int | None = None  # the wait status, once the launcher reported its end
    lost: Message | None = None  # why its end will never be reported (the launcher failed; keys no_verdict.*)

    def finished(self) -> bool:
        """True once the verdict is whole or both pipes are closed: nothing more is to come from it."""
        return _frame(bytes(self.frame)) is not None or self.open_fds == 0


def usable() -> bool:
    """True where children can be started this way (POSIX)."""
    return hasattr(os, "posix_spawn") and hasattr(socket, "send_fds")


def run(job: Task, timeout: float, memory_mb: float) -> Outcome:
    """Run ``job`` in a child with the limits; its returned dict (JSON-able) is the verdict."""
    return dict(pool([job], 1, timeout, memory_mb))[0]


def pool(jobs: Iterable[Task], workers: int, timeout: float, memory_mb: float) -> Iterator[tuple[int, Outcome]]:
    """Run each job in its own child, ``workers`` at a time; yields ``(index, outcome)`` as children finish.

    ``timeout`` is wall-clock seconds per child (0: none); ``memory_mb`` the
    address space each may add to the launcher's (0: no limit).  Every
    outcome is yielded only once the child's whole tree is gone.
    """
    todo = list(enumerate(jobs))
    todo.reverse()
    live: dict[int, _Child] = {}
    sel = selectors.DefaultSelector()
    keep = procs.children() - {la.pid for la in spawn.running()}  # ours, not a submission's: sweeps leave them
    procs.become_subreaper()
    procs.hide_arguments()
    guard = _undumpable()
    restore = _stop_on_signals()
    try:
        while todo or live:
            while todo and len(live) < max(1, workers):
                index, job = todo.pop()
                child = _start(index, job, timeout, memory_mb)
                live[child.ident] = child
                sel.register(child.verdict_fd, selectors.EVENT_READ, (child, "verdict"))
                sel.register(child.output_fd, selectors.EVENT_READ, (child, "output"))
                _listen(sel, child.launcher)
            for key, _ in sel.select(_next_deadline(live.values(), timeout)):
                if isinstance(key.data, Launcher):
                    _hear(sel, key.data, live)
                else:
                    _read(sel, *key.data)
            now = time.monotonic()
            for child in list(live.values()):
                _watch(child, now, timeout)
                if child.status is not None or child.lost is not None:
                    _drain(sel, child)  # what it wrote before it ended may still sit in the pipes
                    _close(sel, child)
                    if child.lost is not None and child.workdir:
                        shutil.rmtree(child.workdir, ignore_errors=True)  # its launcher cannot any more
                    del live[child.ident]
                    procs.sweep(keep | {la.pid for la in spawn.running()})  # what escaped the launcher
                    yield child.index, _finish(child, timeout, memory_mb)
    finally:
        for prepare in {c.prepare for c in live.values()}:  # interrupted: those launchers go, trees and all
            spawn.forget(prepare)
        for child in live.values():
            _close(sel, child)
            if child.workdir:
                shutil.rmtree(child.workdir, ignore_errors=True)
        procs.sweep(keep | {la.pid for la in spawn.running()})
        sel.close()
        guard()
        restore()


def _start(index: int, job: Task, timeout: float, memory_mb: float) -> _Child:
    launcher = spawn.launcher(job.prepare)
    answer_r, answer_w = os.pipe()
    output_r, output_w = os.pipe()
    os.set_blocking(answer_r, False)
    os.set_blocking(output_r, False)
    child = _Child(next(_IDS), index, launcher, job.prepare, answer_r, output_r, time.monotonic())
    try:
        launcher.start(child.ident, job, answer_w, output_w, timeout, memory_mb)
    except OSError:  # the launcher is gone: the child is no verdict, the next job gets a new launcher
        child.lost = Message("no_verdict.not_started")
        spawn.forget(job.prepare)
    return child


def _listen(sel: selectors.BaseSelector, launcher: Launcher) -> None:
    with contextlib.suppress(KeyError, ValueError):
        sel.register(launcher.sock, selectors.EVENT_READ, launcher)


def _hear(sel: selectors.BaseSelector, launcher: Launcher, live: dict[int, _Child]) -> None:
    """One message from a launcher: a child started or ended; or the launcher is gone (its children are lost)."""
    msg = launcher.receive()
    if msg is None:
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(launcher.sock)
        for child in live.values():
            if child.launcher is launcher and child.status is None:
                child.lost = Message("no_verdict.launcher_ended")
        spawn.forget_launcher(launcher)
        return
    which = live.get(msg.get("started") or msg.get("ended") or 0)
    if which is None:
        return
    if "started" in msg:
        which.started = time.monotonic()
        which.workdir = str(msg.get("workdir") or "")
    elif isinstance(msg.get("status"), int):
        which.status = int(msg["status"])


def _watch(child: _Child, now: float, timeout: float) -> None:
    """Ask for the child's end when it is late or done; stop its launcher when that goes unanswered."""
    if child.status is not None or child.lost is not None:
        return
    if child.started is None:
        if now - child.asked > STARTUP:
            child.lost = Message("no_verdict.start_late", seconds=STARTUP)
            spawn.forget(child.prepare)
        return
    late = bool(timeout) and now - child.started > timeout + GRACE
    if late and not child.killed_for_time:
        child.killed_for_time = True
    if (late or child.finished()) and child.ended_at is None:
        child.ended_at = now
        child.launcher.end(child.ident)
    elif child.ended_at is not None and now - child.ended_at > ANSWER_WAIT:
        child.lost = Message("no_verdict.launcher_silent")
        spawn.forget(child.prepare)


def _close(sel: selectors.BaseSelector, child: _Child) -> None:
    for fd in (child.verdict_fd, child.output_fd):
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(fd)
        with contextlib.suppress(OSError):
            os.close(fd)


class Stopped(SystemExit):
    """The checker received SIGTERM or SIGHUP: the pool ends its children, then the process exits ``128 + n``."""


def _stop_on_signals() -> Callable[[], None]:
    """While children run, SIGTERM and SIGHUP raise :class:`Stopped` (the pool's cleanup runs); returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def stop(signum: int, frame: object) -> None:
        raise Stopped(128 + signum)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}

    def undo() -> None:
        for sig, handler in before.items():
            signal.signal(sig, handler)

    return undo


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


def _next_deadline(live: Iterable[_Child], timeout: float) -> float:
    now, soonest = time.monotonic(), POLL
    for c in live:
        if timeout and c.started is not None and c.ended_at is None:
            soonest = min(soonest, max(0.0, c.started + timeout + GRACE - now) + 0.01)
    return soonest


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


def _finish(child: _Child, timeout: float, memory_mb: float) -> Outcome:
    seconds = time.monotonic() - (child.started or child.asked)
    output = child.output.decode("utf-8", "replace")
    if child.dropped:
        output += f"\n[... {child.dropped} more bytes of output dropped]\n"
    verdict = _frame(bytes(child.frame))
    if verdict is not None:
        return Outcome(verdict, output, None, seconds, memory_mb)
    status = child.status or 0
    if child.lost is not None:
        why = child.lost
    elif child.killed_for_time:
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
