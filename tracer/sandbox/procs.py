"""The checker's hold on every process a submission starts: subreaper, process tree, kill, clean arguments.

A process group is no boundary: a submission's process may call
``os.setsid()``, fork twice and ignore every signal it can.  On Linux the
checker therefore becomes a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
a process whose parent ends is handed to the checker instead of to init, so
every process a submission starts stays a descendant of the checker until
the checker reaps it.  :func:`end_tree` kills a child with all its
descendants, found by reading each process's parent in ``/proc``, and
:func:`sweep` kills the *strays* (processes handed to the checker that it
did not start itself) and reaps them, repeating until none is left.

Where bubblewrap runs (:func:`bubblewrap`), each submission also gets a PID
namespace of its own (:mod:`tracer.sandbox.spawn`): the kernel kills every
process in it when its first process ends, and the submission sees no
process outside it.

:func:`hide_arguments` blanks this process's own command line as other
processes read it (``/proc/PID/cmdline``), so a submission cannot read the
teacher's ``-o`` from its checker's arguments.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import subprocess

PR_SET_CHILD_SUBREAPER = 36
"""``prctl`` option (``linux/prctl.h``): orphaned descendants are reparented to this process."""

TITLE = b"attn-trace check"
"""What ``/proc/PID/cmdline`` of the checker shows once :func:`hide_arguments` ran."""


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants; False where the kernel cannot (not Linux)."""
    libc = _libc()
    try:
        return libc is not None and libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except AttributeError:
        return False


def parents() -> dict[int, int]:
    """Every visible process's parent, ``{pid: ppid}``, read from ``/proc/PID/stat`` ({} without ``/proc``)."""
    found: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # it ended while we looked
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")"
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            found[int(name)] = int(fields[1])
    return found


def descendants(roots: set[int], table: dict[int, int] | None = None) -> set[int]:
    """Every process below ``roots`` (not the roots themselves), from one reading of the process table."""
    table = parents() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        children.setdefault(ppid, []).append(pid)
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        for kid in children.get(todo.pop(), []):
            if kid not in seen and kid not in roots:
                seen.add(kid)
                todo.append(kid)
    return seen


def _kill(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def end_tree(pid: int) -> None:
    """SIGKILL ``pid`` (a child of this process, not yet reaped) and every process below it.

    The descendants are killed first, then the child, its process group
    included; those that forked in between are handed to this process
    (the subreaper) and :func:`sweep` ends them.
    """
    _kill(descendants({pid}))
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    _kill({pid})


def sweep(keep: set[int]) -> int:
    """Kill and reap every child of this process not in ``keep``, with everything below it; how many.

    Run after a submission's process ended: what it started is either below
    a live child (ended with that child) or handed to this process, here.
    Repeats until one reading of the process table finds no stray, so a
    process forking while it is being killed cannot slip through.
    """
    me, ended = os.getpid(), 0
    while True:
        table = parents()
        strays = {p for p, pp in table.items() if pp == me and p not in keep}
        if not strays:
            return ended
        _kill(strays | descendants(strays, table))
        for pid in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
                ended += 1


def children() -> set[int]:
    """This process's children now (those a sweep must leave alone: not a submission's)."""
    me = os.getpid()
    return {p for p, pp in parents().items() if pp == me}


def hide_arguments() -> bool:
    """Overwrite this process's command line where ``/proc/PID/cmdline`` reads it; False where it cannot.

    The kernel reads another process's arguments from the memory between
    ``arg_start`` and ``arg_end`` (fields 48 and 49 of ``/proc/self/stat``);
    writing :data:`TITLE` there, then zeros, leaves Python's ``sys.argv``
    (a copy) as it was and shows every other process only ``attn-trace check``.
    """
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rfind(b")") + 2 :].split()
        start, end = int(fields[45]), int(fields[46])  # fields 48 and 49, counted from 1 with pid and comm
    except (OSError, IndexError, ValueError):
        return False
    if end - start < len(TITLE) + 1:
        return False
    ctypes.memset(start, 0, end - start)
    ctypes.memmove(start, TITLE, len(TITLE))
    return True


@functools.cache
def bubblewrap() -> str | None:
    """The ``bwrap`` program when it can make a PID namespace here, else None (``ATTN_TRACE_BWRAP=0``: never)."""
    if os.environ.get("ATTN_TRACE_BWRAP", "") == "0":
        return None
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:  # user namespaces may be off (a container without privileges): try once
        done = subprocess.run(
            [path, *NAMESPACE, "--", "/bin/sh", "-c", ":"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if done.returncode == 0 else None


NAMESPACE: tuple[str, ...] = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
NAMESPACE += ("--unshare-pid", "--die-with-parent", "--new-session")
"""bubblewrap's options: the file system read-only (the launcher's own folder is bound writable on top), a
private ``/dev``, a fresh ``/proc`` of its own PID namespace, killed when the checker dies, no terminal."""
