"""The lessons' results at other sizes, in float64, from the second build's own weights: what it must return.

:mod:`.resize` builds the student's module again with other sizes and
compares its result with what is computed here.  Nothing here runs a
lesson's traced pipeline: each lesson's attention is written out again, as
plainly as it can be, in NumPy float64 (dropout off):

* ``trainable``: ``softmax(Q Kᵀ / √d) V``; ``causal`` and ``rope`` with the
  causal mask (``rope``: queries and keys turned first); ``multihead``
  split into heads, joined, and projected (``W_out``) when the module has it;
* ``window``: the band ``i - w < j <= i`` in place of the causal mask;
* ``gqa``: ``num_heads`` query heads, query head h reading key/value group
  ``h // (num_heads / num_kv_groups)`` (``repeat_interleave``), joined and
  projected;
* ``kvcache``: causal attention over the whole sequence, whose rows the
  generation's calls return piece by piece;
* ``flash``: causal attention of the queries, keys and values themselves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tracer.compare.check import roles, rotations
from tracer.compare.check.model import Role


def softmax(a: np.ndarray) -> np.ndarray:
    """Softmax along the last axis (a row of -inf only stays NaN, as it would anywhere)."""
    with np.errstate(invalid="ignore"):
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        out: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return out


def hidden(t: int, window: int = 0) -> np.ndarray:
    """``t x t``, True where query i may not see key j: ``j > i``, and with a window also ``j <= i - window``."""
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]
    out: np.ndarray = (j > i) | ((i - j >= window) if window else False)
    return out


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, window: int = 0) -> np.ndarray:
    """Scaled dot-product attention over the last two axes, masked causally (and to a window) when asked."""
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(hidden(s.shape[-1], window), -np.inf, s)
    out: np.ndarray = softmax(s) @ v
    return out


def _head(x: np.ndarray, found: dict[str, Role], h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Head ``h`` of the book's wrapper: its own queries, keys and values."""
    q, k, v = (x @ found[r].value[h] for r in roles.QKV)
    return q, k, v


def _heads(a: np.ndarray, n: int) -> np.ndarray:
    """``(b, T, n·d)`` as ``(b, n, T, d)``."""
    b, t, width = a.shape
    return a.reshape(b, t, n, width // n).transpose(0, 2, 1, 3)


def _joined(z: np.ndarray, found: dict[str, Role]) -> np.ndarray:
    """Heads ``(b, n, T, d)`` joined to ``(b, T, n·d)``, then the output projection when the module has one."""
    b, n, t, d = z.shape
    out: np.ndarray = z.transpose(0, 2, 1, 3).reshape(b, t, n * d)
    if "W_out" in found:
        out = out @ found["W_out"].value + (found["b_out"].value if "b_out" in found else 0.0)
    return out


def result(lesson: str, found: dict[str, Role], x: np.ndarray, got: dict[str, Any], style: str = "") -> np.ndarray:
    """Lesson ``lesson``'s result on ``x`` with the weights ``found``, at the sizes ``got`` (dropout off)."""
    causal = lesson != "trainable"
    if "form" in found:  # the book's wrapper: each head its own full attention, joined along the last axis
        heads = range(found["W_query"].value.shape[0])
        z = np.stack([attend(*_head(x, found, h), causal) for h in heads], axis=-3)
        return _joined(z, found)

    def proj(r: str) -> np.ndarray:
        b = found.get(roles.BIAS[r])
        out: np.ndarray = x @ found[r].value + (b.value if b is not None else 0.0)
        return out

    q, k, v = (proj(r) for r in roles.QKV)
    if lesson == "rope":
        q, k = turned(q, style or "half"), turned(k, style or "half")
    if lesson == "multihead":
        n = got["num_heads"]
        return _joined(attend(_heads(q, n), _heads(k, n), _heads(v, n), True), found)
    if lesson == "gqa":
        n, groups = got["num_heads"], got["num_kv_groups"]
        share = n // groups
        kh, vh = (np.repeat(_heads(a, groups), share, axis=1) for a in (k, v))  # repeat_interleave
        return _joined(attend(_heads(q, n), kh, vh, True), found)
    return attend(q, k, v, causal, got.get("window_size", 0) if lesson == "window" else 0)


def turned(x: np.ndarray, style: str) -> np.ndarray:
    """RoPE on ``x``, ``(b, T, d)`` or ``(T, d)``: token ``i`` (from 0) turned by ``i θ_p``, paired by ``style``."""
    t, d = x.shape[-2], x.shape[-1]
    angle = np.arange(t)[:, None] * (rotations.BASE ** (-2.0 * np.arange(d // 2) / d))[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    if x.ndim == 2:
        return rotations.turn(x, cos, sin, style)
    return np.stack([rotations.turn(row, cos, sin, style) for row in x])
