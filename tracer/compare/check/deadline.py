"""A time limit on the student's code: an endless loop becomes one line, not a check that never ends.

The check runs code the user chose to run, and a ``while True`` in it (or an
import that waits forever) would hang the command.  :func:`limit` arms a
timer (``SIGALRM``) around the student's part; when it rings, the code is
interrupted where it is and the check ends with one line and exit status 2.
The timer needs POSIX signals and the main thread: elsewhere (Windows, a
worker thread) the code runs without a limit.  A torch kernel that is
already running finishes before the interruption is seen.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from tracer.errors import InputError
from tracer.message import Arg, Message

SECONDS = 60.0
"""The default limit for loading, building and running the student's code (a lesson-sized check takes ~1 s)."""


class Overtime(BaseException):
    """Raised inside the student's code when the time is up (a BaseException, so ``except Exception`` lets it by)."""


@contextmanager
def limit(seconds: float | None, what: Arg) -> Iterator[None]:
    """Run the body with at most ``seconds`` of wall time (None or 0: no limit); ``what`` names it in the error."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not seconds or not usable:
        yield
        return

    def ring(signum: int, frame: FrameType | None) -> None:
        raise Overtime

    old = signal.signal(signal.SIGALRM, ring)
    start = time.monotonic()
    before = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except Overtime:
        raise InputError(Message("trouble.overtime", what=what, seconds=seconds)) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if before[0]:  # someone else's timer was running: give it back what is left of it
            left = max(before[0] - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, before[1])
