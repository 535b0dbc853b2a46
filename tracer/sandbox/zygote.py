"""The launcher: a fresh Python process that forks one child per task and answers for their ends.

The checker starts it once (:mod:`tracer.sandbox.spawn`) with a constant
command line, under bubblewrap where it runs.  It imports what the tasks
need (torch) but runs none of torch's operations, so a child forked from it
starts in milliseconds and gets a thread pool of its own
(``torch.set_num_threads(2)`` works there; a fork of a process whose OpenMP
pool ran deadlocks).  It is non-dumpable (a child cannot trace it) and the
subreaper of everything below it.

It speaks with the checker over a ``SOCK_SEQPACKET`` socket on descriptor 3,
one JSON message a packet:

- ``{"op": "start", "id", "task"}`` with two descriptors (the child's answer
  and output pipes): fork a child for the task; answered
  ``{"started": id, "workdir": …}``;
- ``{"op": "end", "id"}``: kill that child with every process below it;
- when a child has ended, its tree killed and reaped and its folder removed:
  ``{"ended": id, "status": wait status}``.

It exits when the checker's end of the socket closes, killing what is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import socket
import sys
import tempfile
from typing import Any

from tracer.sandbox import procs

CONTROL_FD = 3
PACKET = 1 << 16
"""The largest message, in bytes (a task is a file name and options)."""

TICK = 0.05
"""Seconds between looks for ended children."""


def serve(prepare: str) -> None:
    """The launcher's loop (never returns): run ``prepare`` (``module:function``), then answer the checker."""
    from tracer.sandbox.child import named, undumpable

    control = socket.socket(fileno=CONTROL_FD)
    procs.become_subreaper()
    undumpable()
    if prepare:
        named(prepare)()
    live: dict[int, tuple[Any, str]] = {}  # pid -> (id, working folder)
    sel = selectors.DefaultSelector()
    sel.register(control, selectors.EVENT_READ)
    try:
        while True:
            if sel.select(TICK):
                data, fds, _, _ = socket.recv_fds(control, PACKET, 2)
                if not data:
                    return
                _request(control, json.loads(data), fds, live)
            _collect(control, live)
    finally:
        for pid in list(live):
            procs.end_tree(pid)
        procs.sweep(set())
        for _, folder in live.values():
            shutil.rmtree(folder, ignore_errors=True)
        os._exit(0)


def _request(control: socket.socket, msg: dict[str, Any], fds: list[int], live: dict[int, tuple[Any, str]]) -> None:
    if msg.get("op") == "start" and len(fds) == 2:
        workdir = tempfile.mkdtemp(prefix="attn-trace-check-")
        pid = os.fork()
        if pid == 0:
            from tracer.sandbox.child import run_task

            control.close()
            run_task(msg["task"], fds[0], fds[1], workdir)  # never returns
        for fd in fds:
            os.close(fd)
        live[pid] = (msg["id"], workdir)
        _send(control, {"started": msg["id"], "workdir": workdir})
    elif msg.get("op") == "end":
        for pid, (ident, _) in live.items():
            if ident == msg.get("id"):
                procs.end_tree(pid)
    else:
        for fd in fds:
            os.close(fd)


def _collect(control: socket.socket, live: dict[int, tuple[Any, str]]) -> None:
    """Report each child that ended, once its tree is gone and its folder removed."""
    for pid in list(live):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if not done:
            continue
        ident, folder = live.pop(pid)
        procs.sweep(set(live))  # what it left behind was handed to us: ended before its end is reported
        shutil.rmtree(folder, ignore_errors=True)
        _send(control, {"ended": ident, "status": status})


def _send(control: socket.socket, msg: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the checker went away: the next read ends the loop
        control.send(json.dumps(msg).encode())


if __name__ == "__main__":
    serve(sys.argv[1] if len(sys.argv) > 1 else "")
