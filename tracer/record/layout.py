"""How an operand is laid out for a primitive: worked out once per way of reading it.

A primitive reads an operand with axis names (``x("j", "k")``) and needs it
permuted and unsqueezed to broadcast against its own axes (``("i", "j",
"k")``).  Which entry to take for a fixed index, which permutation and which
size-one axes to insert depend only on the two tuples of names, never on the
values, so :func:`plan` works them out once, and :func:`lay_out` makes the
permute, the unsqueeze and the broadcast as one strided view (none at all
when the operand is already laid out that way).

A lesson that records thousands of small nodes (kvcache's 510 generation
steps read ``step<s>.q("i", "c")`` against ``step<s>.cache.k("j", "c")`` the
same way each step) spends its time in such per-node bookkeeping, not in
arithmetic: :data:`PLANS` counts how often a plan is worked out, which a test
pins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import torch


@dataclass(frozen=True)
class Plan:
    """How to lay an operand out: ``take`` (fixed indices), then ``source`` (one strided view).

    ``take`` is ``None`` when no index is fixed.  ``source`` gives, per output
    axis, the dimension of the (taken) operand it comes from, or -1 for a new
    axis of size one; ``identity`` says the operand is already laid out so.
    """

    take: tuple[int | slice, ...] | None
    source: tuple[int, ...]
    identity: bool


class Misread(ValueError):
    """An operand read with a repeated axis (``repeated``), or with an axis the primitive does not have."""

    def __init__(self, message: str, repeated: bool = False) -> None:
        super().__init__(message)
        self.repeated = repeated


PLANS = {"made": 0}
"""How many plans :func:`plan` has worked out (not served from its cache): what a test counts."""


@lru_cache(maxsize=4096)
def plan(index: tuple[str, ...], axes: tuple[str, ...]) -> Plan:
    """The views that read an operand indexed ``index`` (a whole number: that 1-based entry) along ``axes``."""
    PLANS["made"] += 1
    take = None
    if any(a.isdigit() for a in index):
        take = tuple(int(a) - 1 if a.isdigit() else slice(None) for a in index)
        index = tuple(a for a in index if not a.isdigit())
    if len(set(index)) != len(index):
        raise Misread("repeated axis", repeated=True)
    missing = [a for a in index if a not in axes]
    if missing:
        raise Misread(f"axes {missing} are not among {axes}")
    source = tuple(index.index(a) if a in index else -1 for a in axes)
    return Plan(take, source, source == tuple(range(len(index))))


def lay_out(t: torch.Tensor, p: Plan, shape: Sequence[int] | None = None) -> torch.Tensor:
    """``t`` read as the plan says, and broadcast to ``shape`` if given: one strided view of its entries.

    A permute, an unsqueeze and an expand are all a choice of sizes and
    strides over the same entries, so one ``as_strided`` (a few microseconds,
    a third of the three views) makes them; an axis of size one that is
    broadcast gets stride 0, as ``expand`` gives it.  ``t`` itself comes back
    when there is nothing to do.
    """
    if p.take is not None:
        t = t[p.take]  # indexing checks the bounds: as_strided would not
    if p.identity and (shape is None or t.shape == shape):
        return t
    size, stride = t.shape, t.stride()
    sizes = [size[d] if d >= 0 else 1 for d in p.source]
    strides = [stride[d] if d >= 0 else 0 for d in p.source]
    if shape is not None:
        for n, (have, want) in enumerate(zip(sizes, shape, strict=True)):
            if have != want:
                if have != 1:
                    raise ValueError(f"an axis of size {have} cannot broadcast to {want}")
                sizes[n], strides[n] = want, 0
    return t.as_strided(sizes, strides, t.storage_offset())


def sizes_of(t: torch.Tensor, p: Plan) -> list[int]:
    """The sizes ``t`` has once laid out by ``p`` (before any broadcast)."""
    size = t.shape
    if p.take is not None:
        size = t[p.take].shape
    return [size[d] if d >= 0 else 1 for d in p.source]


@dataclass(frozen=True)
class Contraction:
    """The layouts of a sum over axis ``over`` of a result laid out along ``out``.

    ``work`` puts ``over`` first (each accumulation step adds two contiguous
    planes), ``perm`` permutes ``work`` back to ``out``, ``rest`` is ``out``
    without ``over`` (the totals' axes), ``prev`` the index by which a running
    sum reads the one before it, and ``lead`` how many axes come before ``over``.
    """

    work: tuple[str, ...]
    perm: tuple[int, ...]
    rest: tuple[str, ...]
    prev: tuple[str, ...]
    lead: int


@lru_cache(maxsize=1024)
def contraction(out: tuple[str, ...], over: str) -> Contraction:
    """The :class:`Contraction` of a sum over ``over`` (an axis of ``out``)."""
    rest = tuple(x for x in out if x != over)
    work = (over, *rest)
    return Contraction(
        work=work,
        perm=tuple(work.index(x) for x in out),
        rest=rest,
        prev=tuple(f"{x}-1" if x == over else x for x in out),
        lead=out.index(over),
    )
