"""The catalogue's hypotheses for lesson ``gqa``: key/value groups handed to the wrong query heads.

Query head h must read group ``ceil(h / r)`` (``repeat_interleave(r, dim=1)``:
groups 1, 1, 2, 2 for four heads and two groups).  ``repeat(1, r, 1, 1)``
tiles the groups instead (1, 2, 1, 2): head h reads group
``(h - 1) mod G + 1``.  Each hypothesis recomputes the lesson from the
reference's own queries and groups with that pairing (for the keys, the
values or both) and looks for the result among the student's tensors.
"""

from __future__ import annotations

import numpy as np

from tracer.compare.check import variants as V
from tracer.compare.check.context import Context, Hit
from tracer.message import Message

WORD = {"values": Message("word.values"), "keys": Message("word.keys")}
"""What is tiled the wrong way, as the sentence names it."""


def tiled(groups: np.ndarray, heads: int) -> np.ndarray:
    """Groups ``[g, …]`` laid out for ``heads`` query heads as ``repeat`` does: 1, 2, …, G, 1, 2, …"""
    return np.concatenate([groups] * (heads // groups.shape[0]), axis=0)


def _attend(c: Context, kh: np.ndarray, vh: np.ndarray) -> list[np.ndarray]:
    """Scores, masked scores, weights and context vectors of the lesson with these per-head keys and values."""
    q = c.ref("hq")[0]
    omega = np.einsum("hbic,hbjc->hbij", q, kh)
    masked = V.fill(omega, c.ref("omega")[1], -np.inf)
    alpha = V.softmax(masked / c.sqrt_dk, -1)
    return [omega, masked, alpha, np.matmul(alpha, vh)]


def _applies(c: Context) -> bool:
    g = c.ref("hk")[0].shape[0] if c.spec.grouped else 0
    return 1 < g < c.spec.heads  # one group, or one per head: both pairings are the same


def repeat_not_interleave(c: Context) -> Hit | None:
    """Keys and values both tiled with ``repeat``: every head reads the wrong group's keys and values."""
    if not _applies(c):
        return None
    kh, vh = tiled(c.ref("hk")[0], c.spec.heads), tiled(c.ref("hv")[0], c.spec.heads)
    steps = (c.step("kh"), c.step("vh"), c.step("alpha"))
    hit = c.first([kh, vh], c.ref("kh")[1], steps)
    if hit is None:
        omega, masked, alpha, z = _attend(c, kh, vh)
        hit = c.first([omega, masked, masked / c.sqrt_dk, alpha], c.ref("omega")[1], steps)
        hit = hit or c.first([z], c.ref("z")[1], steps)
    return None if hit is None else Hit(hit.seen, hit.steps, {"r": str(c.spec.heads // c.ref("hk")[0].shape[0])})


def orders_mixed(c: Context) -> Hit | None:
    """Keys and values paired with the heads in different orders (one by ``repeat_interleave``, one by ``repeat``)."""
    if not _applies(c):
        return None
    kh, vh = c.ref("kh")[0], c.ref("vh")[0]
    k_tiled, v_tiled = tiled(c.ref("hk")[0], c.spec.heads), tiled(c.ref("hv")[0], c.spec.heads)
    for keys, values, wrong in ((kh, v_tiled, "values"), (k_tiled, vh, "keys")):
        z = _attend(c, keys, values)[-1]
        hit = c.first([z], c.ref("z")[1], (c.step("kh"), c.step("vh"), c.step("z")))
        if hit is not None:
            return Hit(hit.seen, hit.steps, {"wrong": WORD[wrong]})
    return None
