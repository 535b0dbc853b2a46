"""``view``/``reshape`` index arithmetic: which source entry each entry of the new shape is, and what its axes mean.

A reshape keeps the entries in C order and groups axes: a block of source
axes becomes a block of new axes of the same total size.  Each source axis's
index is written as arithmetic over the new axes (``((h-1)*4+(d-1))//8+1``),
so explaining an entry of a head-split tensor leads back to the entry it
came from; and the new axes are named by what attention code means by such
a split or join (:func:`_meaning`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Unsupported


def _meaning(src: list[str], sizes: list[int]) -> list[str]:
    """What the new axes of one regrouped block index, by the way attention code splits and joins them.

    A feature axis split in two is (heads, features of a head), ``(h, d)``,
    whatever the sizes (an axis the code then takes apart, ``unbind`` or
    ``x[0]``, is renamed the q/k/v selector ``p`` by
    :mod:`tracer.record.capture.selector`); split in three it is ``(p, h, d)``,
    or ``(h, p, d)`` when only the middle size is 3 (BLOOM's ``(heads, 3, d)``).  Split with the
    batch, it is batch-times-heads ``n`` (torch's ``N·num_heads``) and ``d``,
    and ``n`` (or ``h``) split in two is ``(b, h)``; tokens with batch-times-heads and
    their features, joined in two, are tokens-times-batch ``r`` and features ``c``
    (``nn.MultiheadAttention`` before its out-projection), ``r`` split in two is ``(i, b)``.
    Joined: heads with their features are features ``c``, a batch with its heads ``h``, a batch
    with its tokens the token rows ``i`` (``x.view(-1, c)`` before a matrix product), and such
    rows split in two are ``(b, i)`` again.
    Anything else gets fresh letters.
    """
    if len(sizes) == 1:
        return ["c"] if "d" in src or "c" in src else ["h"] if "h" in src else ["i"] if "i" in src else ["e"]
    if len(src) == 1 and src[0] in ("h", "n") and len(sizes) == 2:
        return ["b", "h"]
    if len(src) == 1 and src[0] == "i" and len(sizes) == 2:  # GPT-2's ``Conv1D``: (b·t, c) viewed back as (b, t, c)
        return ["b", "i"]
    if len(src) == 1 and src[0] == "r" and len(sizes) == 2:  # tokens times batch, split again
        return ["i", "b"]
    if len(sizes) == 2 and "n" in src and "i" in src:  # ``nn.MultiheadAttention``'s heads joined: (T·N, E)
        return ["r", "c"]
    if len(sizes) == 2 and "b" in src:  # ``nn.MultiheadAttention``: the batch and the heads in one axis
        return ["n", "d"]
    if len(sizes) == 2:  # heads and their features; an axis the code later takes apart is q/k/v (``selector``)
        return ["h", "d"]
    if len(sizes) == 3:  # (3, heads, d) as most code views it, or BLOOM's (heads, 3, d)
        return ["h", "p", "d"] if sizes[1] == 3 != sizes[0] else ["p", "h", "d"]
    return ["e"] * len(sizes)


def regroup(src_names: Sequence[str], src: list[int], dst: list[int]) -> tuple[list[str], list[str]]:
    """Names for the new axes and, per source axis, its index as arithmetic over them (C order)."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        gi, gj = [i] if i < len(src) else [], [j] if j < len(dst) else []
        ps = src[i] if i < len(src) else 1
        pd = dst[j] if j < len(dst) else 1
        i, j = i + bool(gi), j + bool(gj)
        while ps != pd:
            if ps < pd and i < len(src):
                gi.append(i)
                ps *= src[i]
                i += 1
            elif j < len(dst):
                gj.append(j)
                pd *= dst[j]
                j += 1
            else:
                raise Unsupported("reshape groups")
        if not gi and groups:  # trailing axes of size one belong to the axis they were split from
            groups[-1][1].extend(gj)
        else:
            groups.append((gi, gj))
    groups, ones = _widened(groups, src, dst, src_names)
    names: list[str] = [""] * len(dst)
    dropped = {gi[0] for gi, gj in groups if len(gi) == 1 and not gj}  # axes of size one that go away

    def joined(e: int) -> bool:  # heads of one feature each, joined again: (…, h, 1) -> features c
        after = src_names[e + 1] if e + 1 < len(src_names) else ""
        return src_names[e] == "h" and e + 1 in dropped and after == "d" and "c" not in src_names

    kept = {gj[0]: "c" if joined(gi[0]) else src_names[gi[0]] for gi, gj in groups if len(gi) == 1 and len(gj) == 1}
    for d, name in kept.items():
        names[d] = name
    used = list(src_names) + list(kept.values())
    for d in ones:  # broadcast axes put in front of a kept one: batch, heads
        names[d] = ax.fresh(used, ("b", "h", "u"))
        used.append(names[d])
    for gi, gj in groups:
        if len(gi) == 1 and len(gj) == 1:
            continue
        wanted = _meaning([src_names[e] for e in gi], [dst[d] for d in gj])
        for d, want in zip(gj, wanted, strict=True):
            mine = [n for n in used if n not in [src_names[e] for e in gi]]  # the block's own names go away
            names[d] = ax.fresh([*mine, *(names[x] for x in gj if names[x])], (want, "h", "d", "c", "e"))
            used.append(names[d])
    exprs: list[str] = [""] * len(src)
    for gi, gj in groups:
        if len(gi) == 1 and len(gj) == 1:
            exprs[gi[0]] = names[gj[0]]
            continue
        flat = [_times(f"({names[d]}-1)", math.prod(dst[d + 1 : gj[-1] + 1])) for d in gj if dst[d] != 1]
        f = "+".join(flat) or "0"
        for e in gi:
            stride = math.prod(src[e + 1 : gi[-1] + 1])
            if src[e] == 1:
                exprs[e] = "1"
            elif e == gi[0]:
                exprs[e] = f"({f})//{stride}+1" if stride != 1 else f"{f}+1"
            else:
                exprs[e] = f"({f})//{stride}%{src[e]}+1" if stride != 1 else f"({f})%{src[e]}+1"
    return names, exprs


def _widened(
    groups: list[tuple[list[int], list[int]]], src: list[int], dst: list[int], src_names: Sequence[str]
) -> tuple[list[tuple[list[int], list[int]]], list[int]]:
    """Groups in which a source axis only gained axes of size one (``mask.view(1, 1, T, T)``) keep that axis.

    Features split with a size-one axis after them (``view(b, t, heads, 1)``, heads of one feature each)
    are heads and their features, not features widened.
    Returns the groups, such an axis now a kept pair, and the new axes of size one.  Batch times heads
    (``n``, ``h``) is the exception: split into a batch of one and the heads, it is ``(b, h)`` (``_meaning``).
    """
    out: list[tuple[list[int], list[int]]] = []
    ones: list[int] = []
    for gi, gj in groups:
        big = [d for d in gj if dst[d] != 1]
        alone = len(gi) == 1 and len(gj) > 1 and len(big) == 1 and src_names[gi[0]] not in ("n", "h")
        alone = alone and (big[0] == gj[-1] or src_names[gi[0]] not in ("c", "k"))  # (b, t, 2, 1): heads of one
        if alone and dst[big[0]] == src[gi[0]] != 1:
            out.append((gi, big))
            ones += [d for d in gj if d != big[0]]
        else:
            out.append((gi, gj))
    return out, ones


def _times(expr: str, n: int) -> str:
    return expr if n == 1 else f"{expr}*{n}"
