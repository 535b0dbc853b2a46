"""Find a reference quantity among the student's tensors, by value, whatever their layout.

A student's tensor holds a reference quantity when some reordering of its axes
(a transpose, heads split before or after the batch axis) gives the
reference's values within tolerance.  Leading axes of size one are ignored
(an ``unsqueeze``), and a student tensor with more leading axes than the
reference (a batch the reference does not have) is read at its first entry.
One reordering is never allowed: the query axis ``i`` must come before the key
axis ``j``, since a score table read the other way round is a different table
(that is the "scores transposed" mistake, not a layout).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import combinations, permutations

import numpy as np

from tracer.compare.check.model import Match, Seen

RTOL = 1e-4
ATOL = 1e-5
HIDDEN = -1e4
"""A score at or below this hides its key as −∞ does: ``exp`` of it is 0, whatever the row's other scores.

Code masks with a large finite number as often as with −∞: BERT's
extended masks add −10000, d2l fills −1e6, the Annotated Transformer
−1e9, Hugging Face ``torch.finfo(dtype).min``.  Where the lesson holds −∞
a student's entry this low is the same hidden key, so the masked scores are
compared, not skipped as computed another way."""


def same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Entry by entry: within tolerance, infinities of one sign, NaN with NaN, or −∞ against a hiding fill."""
    with np.errstate(invalid="ignore"):
        hidden = ((a == -np.inf) & (b <= HIDDEN)) | ((b == -np.inf) & (a <= HIDDEN))
    out: np.ndarray = np.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True) | hidden
    return out


def close(a: np.ndarray, b: np.ndarray) -> bool:
    """Every entry the same (:func:`same`)."""
    return bool(same(a, b).all())


def error(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b|, with the same entries (:func:`same`) counting 0 and any other non-finite mismatch counting inf."""
    same_ = (a == b) | (np.isnan(a) & np.isnan(b)) | (same(a, b) & ~np.isfinite(a + b))
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.where(same_, 0.0, np.abs(a - b))
    d = np.where(np.isnan(d), np.inf, d)
    return float(d.max()) if d.size else 0.0


def layouts(ref: np.ndarray, axes: Sequence[str], value: np.ndarray, lead: int | None = None) -> Iterator[Match]:
    """Every reading of ``value`` (with a dummy ``Seen``) laid out as ``ref``; ``lead`` fixes the leading axes."""
    yield from readings(ref, axes, Seen("", "", value), lead)


def readings(ref: np.ndarray, axes: Sequence[str], seen: Seen, lead: int | None = None) -> Iterator[Match]:
    """Every way of reading ``seen`` as ``ref``: leading axes first entry, then axis permutations."""
    v = seen.value
    ones = 0
    while v.ndim > ref.ndim and v.shape[0] == 1:
        v, ones = v[0], ones + 1
    extra = v.ndim - ref.ndim
    if extra == -1 and not lead:
        yield from _merged(ref, axes, seen, v, ones)
        return
    yield from _permuted(ref, axes, seen, v.shape, ones, lead)
    if extra > 0:
        yield from _broadcast(ref, axes, seen, v.shape, ones, lead)


def _permuted(
    ref: np.ndarray, axes: Sequence[str], seen: Seen, shape: tuple[int, ...], ones: int, lead: int | None
) -> Iterator[Match]:
    """Readings of a tensor of ``shape`` (after ``ones`` leading axes of size one) as ``ref``.

    Leading axes beyond the reference's are read at their first entry; the rest are permuted.
    """
    extra = len(shape) - ref.ndim
    if extra < 0 or (lead is not None and extra != lead) or sorted(shape[extra:]) != sorted(ref.shape):
        return
    for perm in _perms(shape[extra:], ref.shape):
        if not _ordered(axes, perm):
            continue
        yield Match(seen, perm, ones + extra, 0.0)


def _broadcast(
    ref: np.ndarray, axes: Sequence[str], seen: Seen, shape: tuple[int, ...], ones: int, lead: int | None
) -> Iterator[Match]:
    """Readings of ``shape`` without some of its inner axes of size one: an axis kept for broadcasting.

    Code that keeps a heads axis for one head holds its scores as
    ``(b, 1, T, T)`` (BERT's and Hugging Face's layers, and any
    ``(b, 1, T, T)`` mask added to them broadcasts so); the lesson of one
    head holds them as ``(b, T, T)``.  An axis of size one is an axis with
    one entry, not a position: dropping it moves no value, so the axes
    around it are read as the axes they are.  Axes of size one are only
    dropped where the tensor has more axes than the reference and more axes
    of size one than it; the leading axes that are left over are read at
    their first entry as before (``lead``).  The axes kept must then be the
    reference's in its own order: an axis of one beside a transpose is not
    a broadcast but a merge not made (heads one number wide, ``(b, h, T, 1)``,
    are joined into ``(b, T, h)`` only by a transpose the code may have
    skipped, the mistake ``heads_not_transposed``).
    """
    inner = [a for a, n in enumerate(shape) if n == 1 and a > 0]
    surplus = min(len(shape) - ref.ndim, len(inner) - sum(n == 1 for n in ref.shape))
    for k in range(1, surplus + 1):
        for drop in combinations(inner, k):
            kept = tuple(n for a, n in enumerate(shape) if a not in drop)
            extra = len(kept) - ref.ndim
            if (lead is not None and extra != lead) or min(drop) < extra:
                continue  # a dropped axis must lie after the leading axes read at their first entry
            if kept[extra:] == ref.shape:  # the kept axes in the reference's own order: nothing else moved
                yield Match(seen, tuple(range(ref.ndim)), ones + extra, 0.0, kept[extra:])


def _ordered(axes: Sequence[str], perm: tuple[int, ...]) -> bool:
    """The query axis ``i`` still comes before the key axis ``j`` (a table read the other way round is a mistake)."""
    if "i" not in axes or "j" not in axes:
        return True
    return perm[axes.index("i")] < perm[axes.index("j")]


MERGED = ("b", "h")
"""The reference axes a student's tensor may hold merged into one: the batch and the heads."""


def _merged(ref: np.ndarray, axes: Sequence[str], seen: Seen, v: np.ndarray, ones: int) -> Iterator[Match]:
    """Readings of ``v`` whose one axis holds the batch and the heads merged, in either order.

    ``nn.MultiheadAttention`` (on its path that returns the weights) and
    d2l's ``transpose_qkv`` compute attention on ``(b·heads, T, d)``: batch
    entry ``n``, head ``m`` at ``n·heads + m``.  Some code merges heads
    first.  Both are layouts, not mistakes; which entry is which is read
    from the reshape, and the other axes may be permuted as usual.
    """
    if any(a not in axes for a in MERGED):
        return
    nb, nh = (int(ref.shape[axes.index(a)]) for a in MERGED)
    at = tuple(axes.index(a) for a in MERGED)
    for m, size in enumerate(v.shape):
        if size != nb * nh:
            continue
        for pair in ((nb, nh), (nh, nb)):
            shape = (*v.shape[:m], *pair, *v.shape[m + 1 :])
            if sorted(shape) != sorted(ref.shape):
                continue
            outer, inner = (m, m + 1) if pair == (nb, nh) else (m + 1, m)
            for perm in _perms(shape, ref.shape):
                if (perm[at[0]], perm[at[1]]) == (outer, inner) and _ordered(axes, perm):
                    yield Match(seen, perm, ones, 0.0, shape)


def _perms(have: tuple[int, ...], want: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    ident = tuple(range(len(have)))
    if have == want:
        yield ident
    for p in permutations(ident):
        if p != ident and tuple(have[d] for d in p) == want:
            yield p


def find(ref: np.ndarray, axes: Sequence[str], seen: Iterable[Seen], lead: int | None = None) -> Match | None:
    """The first student tensor (in the order they were made) that holds ``ref``.

    Tensors in the reference's own axes come first; one that holds it only
    with batch and heads merged (:func:`_merged`) is taken when none does.
    """
    seen = list(seen)
    for merged in (False, True):
        for s in seen:
            for m in readings(ref, axes, s, lead):
                if m.merged is merged and close(m.view(), ref):
                    return m
    return None


def nearest(ref: np.ndarray, axes: Sequence[str], seen: Iterable[Seen], lead: int | None = None) -> Match | None:
    """The student tensor closest to ``ref`` among those of a fitting shape.

    Closest means the fewest entries out of tolerance, then the smallest
    max |difference|; ties go to the tensor made first.  As in :func:`find`,
    readings with batch and heads merged count only when no other fits.
    """
    seen = list(seen)
    for merged in (False, True):
        best: Match | None = None
        key: tuple[int, float] | None = None
        for s in seen:
            for m in readings(ref, axes, s, lead):
                if m.merged is not merged:
                    continue
                k = distance(m, ref)
                if key is None or k < key:
                    best, key = replace(m, error=k[1]), k
        if best is not None:
            return best
    return None


def distance(m: Match, ref: np.ndarray) -> tuple[int, float]:
    """How far a reading is from ``ref``: entries out of tolerance, then max |difference|."""
    got = m.view()
    return int((~same(got, ref)).sum()), error(got, ref)


def gaps(ref: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - ref| entry by entry in float64: 0 within tolerance, an inf or NaN against a number infinite."""
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    return np.where(same(got, ref), 0.0, np.where(np.isnan(gap), np.inf, gap))


def first_difference(ref: np.ndarray, got: np.ndarray, shows: np.ndarray | None = None) -> tuple[int, ...]:
    """The entry of ``got`` to show for its difference from ``ref``: where the mistake shows most.

    The first entry out of tolerance is often where a mistake hardly shows: a
    missing √d_k changes every score, but row 1 of a causal softmax is 1
    whatever its score.  So the entry shown is the one whose consequence
    differs most, when ``shows`` gives that entry by entry (the :func:`gaps`
    of the weights that follow, in ``ref``'s shape); else, or when the
    consequence differs nowhere ``got`` does, the one with the largest
    |difference| itself.  The first in row-major order among equals; all
    zeros when no entry differs.
    """
    gap = gaps(ref, got)
    if not gap.any():
        return tuple(0 for _ in ref.shape)
    if shows is not None and shows.shape == gap.shape and (seen := np.where(gap > 0, shows, 0.0)).any():
        gap = seen
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), gap.shape))


def same_layout(value: np.ndarray, ref: np.ndarray, batch: bool) -> bool:
    """``value`` is ``ref`` in the lesson's own layout: the same shape and values, or a batch of copies of it.

    A lesson traced on one sequence whose check feeds the student a batch of
    identical copies (``batch``: lessons window and gqa) expects each batch
    entry to be the lesson's result; anywhere else an extra axis is a mistake.
    """
    if value.shape == ref.shape:
        return close(value, ref)
    return batch and value.shape[1:] == ref.shape and all(close(v, ref) for v in value)
