"""What a step reads: its input ids, written out only when someone looks at them.

A step's inputs follow from its node's references (:class:`~tracer.core.trace.Ref`):
each reference picks, per axis of the node it reads, one index or every index
(``*``).  So each reference selects a *box* of the operand, a Cartesian
product of index lists, and the step's inputs are the boxes one after the
other.  A softmax over 512 keys reads a box of 512 entries; a page shows five
of them and says how many there are.  :class:`Reads` is that list as a
sequence: its length is the boxes' sizes added, and entry ``k`` is rendered
from ``k`` written in the boxes' mixed radix, so looking at five entries costs
five ids, not 512.

Two references into one node may select the same entry (``x * x``), and a
step may read earlier entries of its own node (a running sum): then the ids
are written out once, in order, without repeats and without the step itself,
which is what :attr:`tracer.core.trace.Step.inputs` has always meant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice, product
from math import prod
from typing import overload

from tracer.core import ids

Box = tuple[str, Sequence[int], list[list[int]] | None]
"""One reference's selection: the operand's name, its ``split``, and per leading axis the 1-based
indices chosen (None: the whole operand, named bare)."""


Learn = Callable[[str, str, tuple[int, ...]], None]
"""Told each id a :class:`Reads` writes, with the node it names and its 1-based index (see :class:`Reads`)."""


def render(box: Box, learn: Learn | None = None) -> list[str]:
    """Every id a box selects, in order (the last axis fastest); each one told to ``learn`` when given."""
    name, split, axes = box
    if axes is None:
        if learn is not None:
            learn(name, name, ())
        return [name]
    out = [ids.render(name, split, c) for c in product(*axes)]
    if learn is not None:
        for sid, c in zip(out, product(*axes), strict=True):
            learn(sid, name, c)
    return out


class Reads(Sequence[str]):
    """The ids a step reads, in argument order: a sequence that renders only the entries asked for."""

    __slots__ = ("_boxes", "_ids", "_learn", "_sizes", "_total")

    def __init__(self, boxes: list[Box], my_node: str, me: Callable[[], str], learn: Learn | None = None) -> None:
        """``boxes`` in argument order; the reading step's node name, and its id (asked only if needed).

        ``learn``, when given, is told every id written with where it points
        (a trace remembers it, so looking the id up needs no parsing).
        """
        self._boxes = boxes
        self._learn = learn
        names = [b[0] for b in boxes]
        self._ids: tuple[str, ...] | None = None
        if my_node in names or len(set(names)) < len(names):  # repeats or the step itself: write them out
            out = [i for b in boxes for i in render(b, learn)]
            own = me()
            self._ids = tuple(i for i in dict.fromkeys(out) if i != own)
        self._sizes = [1 if axes is None else prod(len(a) for a in axes) for _, _, axes in boxes]
        self._total = len(self._ids) if self._ids is not None else sum(self._sizes)

    def __len__(self) -> int:
        """How many ids, counted from the boxes' sizes without writing any."""
        return self._total

    @overload
    def __getitem__(self, k: int) -> str: ...
    @overload
    def __getitem__(self, k: slice) -> list[str]: ...
    def __getitem__(self, k: int | slice) -> str | list[str]:
        """Entry ``k`` (or a slice of them), rendered on the spot."""
        if isinstance(k, slice):
            start, stop, step = k.indices(self._total)
            if step == 1 and self._ids is None:
                return self._run(start, stop)
            return [self[i] for i in range(start, stop, step)]
        if self._ids is not None:
            return self._ids[k]
        n = self._total
        if not -n <= k < n:
            raise IndexError(k)
        k %= n
        for box, size in zip(self._boxes, self._sizes, strict=True):
            if k < size:
                return _entry(box, k, self._learn)
            k -= size
        raise AssertionError("unreachable: k was checked against the total")  # pragma: no cover

    def _run(self, start: int, stop: int) -> list[str]:
        """Entries ``start`` to ``stop`` (in range, in order), read off each box's index lists in one pass.

        A panel lists the first 16 inputs of every step it embeds: walking
        the boxes once costs less than finding each entry's box anew.
        """
        out: list[str] = []
        for (name, split, axes), size in zip(self._boxes, self._sizes, strict=True):
            if start < size and stop > 0:
                if axes is None:
                    out.append(name)
                    if self._learn is not None:
                        self._learn(name, name, ())
                else:
                    for index in islice(product(*axes), max(start, 0), min(stop, size)):
                        sid = ids.render(name, split, index)
                        if self._learn is not None:
                            self._learn(sid, name, index)
                        out.append(sid)
            start -= size
            stop -= size
        return out

    def __iter__(self) -> Iterator[str]:
        """Every id in order (one box at a time)."""
        if self._ids is not None:
            yield from self._ids
            return
        for box in self._boxes:
            yield from render(box, self._learn)


def _entry(box: Box, k: int, learn: Learn | None) -> str:
    """The ``k``-th id of a box: ``k`` read in the mixed radix of its index lists, last axis fastest."""
    name, split, axes = box
    index: tuple[int, ...] = ()
    if axes is not None:
        backwards = []
        for choices in reversed(axes):
            k, r = divmod(k, len(choices))
            backwards.append(choices[r])
        index = tuple(reversed(backwards))
    sid = name if axes is None else ids.render(name, split, index)
    if learn is not None:
        learn(sid, name, index)
    return sid
