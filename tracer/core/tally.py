"""Work counters a test can read: entries counted where the work is done, so no busy machine moves them.

A module that offers one keeps a :class:`Tallies` of its own ``Tally``
dataclass (:mod:`tracer.core.exact` counts the entries its ``exp`` sends to
``decimal``, :mod:`tracer.core.predict` the entries of running sums read out
of memory order).  ``with tallies.counting() as t:`` opens a fresh tally for
the block; the module adds to every open one, and a block that opens none
costs the module one empty loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Tallies(Generic[T]):
    """The tallies of one kind open right now (nested blocks each get their own)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self.open: list[T] = []

    @contextlib.contextmanager
    def counting(self) -> Iterator[T]:
        """A fresh tally, counted into for as long as the block runs."""
        tally = self._make()
        self.open.append(tally)
        try:
            yield tally
        finally:
            self.open.remove(tally)
