"""The online softmax and its classic mistakes, in float64: what a student's blocked loop would return.

Each function takes queries, keys and values ``[T, d]``, the block size and
returns the context vectors ``[T, d_v]`` of causal attention (scores
scaled by ``sqrt(d_k)``), computed with one loop over the key blocks, all
rows at once, the way FlashAttention does, except for the one mistake it
makes on purpose.  ``check --lesson flash`` compares the student's results
with the lesson's and, where they differ, with each mistake's
(:mod:`.mistakes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Loop = Callable[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]


def _scores(q: np.ndarray, k: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Scaled scores of every query against keys ``lo:hi``, -inf where a key comes after the query."""
    s = q @ k[lo:hi].T / math.sqrt(k.shape[1])
    later = np.arange(lo, hi)[None, :] > np.arange(q.shape[0])[:, None]
    return np.where(later, -np.inf, s)


def _loop(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    block: int,
    *,
    rescale_l: bool = True,
    rescale_o: bool = True,
    exponent: str = "running",  # "block": e^(s - block max) while the factor uses the running max
    update_m: bool = True,
    divide: str = "end",  # "inside": o / l after every block; "twice": inside and again at the end
    tail: bool = True,
) -> np.ndarray:
    t = q.shape[0]
    m = np.full(t, -np.inf)
    ell = np.zeros(t)
    o = np.zeros((t, v.shape[1]))
    stop = t if tail else (t // block) * block
    with np.errstate(all="ignore"):
        for lo in range(0, stop, block):
            hi = min(lo + block, t)
            s = _scores(q, k, lo, hi)
            top = s.max(axis=1)
            new = np.maximum(m, top)
            safe = np.where(np.isinf(new), 0.0, new)
            ref = np.where(np.isinf(top), 0.0, top) if exponent == "block" else safe
            p = np.exp(s - ref[:, None])
            c = np.exp(m - safe)
            if not update_m:  # m stays -inf: every block with a key to see wipes what came before
                c = np.where(np.isinf(top), 1.0, c)
            ell = (ell * c if rescale_l else ell) + p.sum(axis=1)
            o = (o * c[:, None] if rescale_o else o) + p @ v[lo:hi]
            if divide != "end":
                o = o / ell[:, None]
            if update_m:
                m = new
    return o if divide == "inside" else o / ell[:, None]


def correct(q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int) -> np.ndarray:
    """The online softmax as it should be."""
    return _loop(q, k, v, block)


MISTAKES: dict[str, dict[str, Loop]] = {
    "flash_no_rescale": {
        "neither": lambda q, k, v, b: _loop(q, k, v, b, rescale_l=False, rescale_o=False),
    },
    "flash_sum_only": {
        "sum": lambda q, k, v, b: _loop(q, k, v, b, rescale_o=False),
    },
    "flash_block_max": {
        "block": lambda q, k, v, b: _loop(q, k, v, b, exponent="block"),
        "stale": lambda q, k, v, b: _loop(q, k, v, b, update_m=False),
    },
    "flash_divide_inside": {
        "inside": lambda q, k, v, b: _loop(q, k, v, b, divide="inside"),
        "twice": lambda q, k, v, b: _loop(q, k, v, b, divide="twice"),
    },
    "flash_tail_dropped": {
        "tail": lambda q, k, v, b: _loop(q, k, v, b, tail=False),
    },
}
"""Catalogue code -> the forms of that mistake (each a loop that makes it)."""
