"""How an operand is laid out for a primitive: worked out once per way of reading it.

A primitive reads an operand with axis names (``x("j", "k")``) and needs it
permuted and unsqueezed to broadcast against its own axes (``("i", "j",
"k")``).  Which entry to take for a fixed index, which permutation and which
size-one axes to insert depend only on the two tuples of names, never on the
values, so :func:`plan` works them out once and every later reading of the same
shape costs only the torch views it needs (none at all when the operand is
already laid out that way).

A lesson that records thousands of small nodes (kvcache's 510 generation
steps read ``step<s>.q("i", "c")`` against ``step<s>.cache.k("j", "c")`` the
same way each step) spends its time in such per-node bookkeeping, not in
arithmetic: :data:`PLANS` counts how often a plan is worked out, which a test
pins.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch


@dataclass(frozen=True)
class Plan:
    """The views that lay an operand out: ``take`` (fixed indices), ``order`` (a permute), ``slots`` (a reshape).

    Each is ``None`` when that view would change nothing.  ``slots`` gives,
    per output axis, the permuted operand's dimension it comes from, or -1 for
    a new axis of size one.
    """

    take: tuple[int | slice, ...] | None
    order: tuple[int, ...] | None
    slots: tuple[int, ...] | None


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
    order = tuple(sorted(range(len(index)), key=lambda d: axes.index(index[d])))
    permuted = [index[d] for d in order]
    slots = tuple(permuted.index(a) if a in index else -1 for a in axes)
    return Plan(
        take,
        None if order == tuple(range(len(index))) else order,
        None if len(index) == len(axes) else slots,
    )


def lay_out(t: torch.Tensor, p: Plan) -> torch.Tensor:
    """``t`` read as the plan says: views only, and ``t`` itself when there is nothing to do."""
    if p.take is not None:
        t = t[p.take]
    if p.order is not None:
        t = t.permute(p.order)
    if p.slots is not None:
        shape = t.shape
        t = t.reshape([shape[s] if s >= 0 else 1 for s in p.slots])
    return t


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
