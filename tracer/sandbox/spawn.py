"""The checker's side of the launcher: start it with nothing of the teacher's paths, ask it for children.

A job is a :class:`Task`: a function named by ``module:function`` and its
JSON arguments.  :class:`Launcher` starts :mod:`tracer.sandbox.zygote` as a
new process image (``python -c BOOT``; under bubblewrap where it runs,
:func:`tracer.sandbox.procs.bubblewrap`), once per process and kind of task,
and asks it for one child per task.

What a child sees of the checker:

- the launcher's arguments are ``python -c BOOT``, a constant; the folders
  to import from and the task (file, lesson, options) arrive on its socket;
- its working folder is a fresh folder inside the launcher's own
  ``attn-trace-check-*`` folder (its ``TMPDIR``, removed when the launcher
  stops), and ``PWD`` says so; ``OLDPWD`` (the teacher's previous folder)
  is removed;
- under bubblewrap: a PID namespace of its own (no process outside it is
  visible, the checker included), the whole file system read-only but for
  the launcher's folder, and the namespace killed with the checker
  (``--die-with-parent``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from tracer.sandbox import procs

BOOT = (
    "import json, socket, sys; s = socket.socket(fileno=3); hello = json.loads(s.recv(65536)); s.detach(); "
    "sys.path[:0] = hello['path']; from tracer.sandbox.zygote import serve; serve(hello['prepare'])"
)
"""The launcher's program: its first message says where to import from and what to import."""


@dataclass(frozen=True)
class Task:
    """What a child runs: ``target`` (``module:function``) called with ``kwargs``; its dict is the answer.

    ``prepare`` (``module:function``) is what the launcher runs once, before
    forking any child (imports such as torch's: a child then starts in
    milliseconds and its memory limit counts from there); ``path`` lists
    folders the child imports from besides attn-trace's own.
    """

    target: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    prepare: str = ""
    path: tuple[str, ...] = ()


def _home() -> str:
    """The folder that holds the ``tracer`` package (the launcher imports attn-trace from where this runs)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def environment(home: str) -> dict[str, str]:
    """The launcher's (and so each child's) environment: the checker's, without its folders.

    ``TMPDIR`` is the launcher's own folder: the children's working folders
    and whatever temporary files they make go there, and go with it.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("OLDPWD", "PWD")}
    env["PWD"] = "/"
    env["TMPDIR"] = home
    return env


class Launcher:
    """One running launcher: :meth:`start` asks for a child, messages come back on :attr:`sock`."""

    def __init__(self, prepare: str) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.home = tempfile.mkdtemp(prefix="attn-trace-check-")
        argv = [sys.executable, "-c", BOOT]
        wrap = procs.bubblewrap()
        if wrap is not None:
            argv = [wrap, *procs.NAMESPACE, "--bind", self.home, self.home, "--chdir", self.home, "--", *argv]
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
        ]
        try:
            self.pid = os.posix_spawn(argv[0], argv, environment(self.home), file_actions=actions, setsid=True)
        finally:
            theirs.close()
        self.sock = mine
        self.stopped = False
        self.namespaced = wrap is not None
        self.sock.send(json.dumps({"path": [_home()], "prepare": prepare}).encode())

    def start(self, ident: int, task: Task, answer_w: int, output_w: int, timeout: float, memory_mb: float) -> None:
        """Ask for a child running ``task`` with these pipe ends (closed here once sent)."""
        msg = {
            "target": task.target,
            "kwargs": task.kwargs,
            "path": list(task.path),
            "timeout": timeout,
            "memory": memory_mb,
        }
        try:
            socket.send_fds(
                self.sock, [json.dumps({"op": "start", "id": ident, "task": msg}).encode()], [answer_w, output_w]
            )
        finally:
            os.close(answer_w)
            os.close(output_w)

    def end(self, ident: int) -> None:
        """Ask for that child's end (its tree killed); its ``ended`` message follows."""
        with contextlib.suppress(OSError):
            self.sock.send(json.dumps({"op": "end", "id": ident}).encode())

    def receive(self) -> dict[str, Any] | None:
        """The next message, or None once the launcher is gone."""
        try:
            data = self.sock.recv(65536)
        except OSError:
            return None
        if not data:
            return None
        try:
            got = json.loads(data)
        except ValueError:
            return None
        return got if isinstance(got, dict) else None

    def stop(self) -> None:
        """End the launcher and everything below it, and reap it (once)."""
        if self.stopped:
            return
        self.stopped = True
        self.sock.close()
        procs.end_tree(self.pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        shutil.rmtree(self.home, ignore_errors=True)


_RUNNING: dict[str, Launcher] = {}


def launcher(prepare: str) -> Launcher:
    """The launcher for tasks with this ``prepare``, started on first use and kept for the process's life."""
    got = _RUNNING.get(prepare)
    if got is None:
        got = _RUNNING[prepare] = Launcher(prepare)
    return got


def forget(prepare: str) -> None:
    """Stop that launcher (after an interruption, or once it failed); the next task starts a new one."""
    got = _RUNNING.pop(prepare, None)
    if got is not None:
        got.stop()


def forget_launcher(which: Launcher) -> None:
    """Stop this launcher if it is still the one kept for its tasks (it failed)."""
    for prepare, got in list(_RUNNING.items()):
        if got is which:
            forget(prepare)
    with contextlib.suppress(OSError):
        which.stop()


def running() -> list[Launcher]:
    """The launchers started and not stopped."""
    return list(_RUNNING.values())


@atexit.register
def _stop_all() -> None:
    for prepare in list(_RUNNING):
        forget(prepare)


def namespaced() -> bool:
    """True when children run in a PID namespace of their own (bubblewrap)."""
    return procs.bubblewrap() is not None
