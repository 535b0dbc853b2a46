"""Attention in NumPy float64, the parts a lesson's ``at_size`` writes its result at other sizes with.

:mod:`.resize` builds the student's module again with other sizes and
compares its result with the lesson's ``at_size`` there, computed from the
second build's own weights (dropout off) with these parts: the projections,
scaled dot-product attention masked causally or to a window, heads split and
joined (and projected), the book's wrapper of heads, and RoPE's turn.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tracer.compare.check.model import BIAS, QKV, Role

BASE = 10000.0
"""RoPE's base: ``θ_p = base^(−2(p−1)/d)``."""
STYLES = ("half", "interleaved")
"""How a rotation pairs components: ``x_p`` with ``x_p+d/2`` (``rotate_half``), or neighbours."""


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
    q, k, v = (x @ found[r].value[h] for r in QKV)
    return q, k, v


def heads(a: np.ndarray, n: int) -> np.ndarray:
    """``(b, T, n·d)`` as ``(b, n, T, d)``."""
    b, t, width = a.shape
    return a.reshape(b, t, n, width // n).transpose(0, 2, 1, 3)


def joined(z: np.ndarray, found: dict[str, Role]) -> np.ndarray:
    """Heads ``(b, n, T, d)`` joined to ``(b, T, n·d)``, then the output projection when the module has one."""
    b, n, t, d = z.shape
    out: np.ndarray = z.transpose(0, 2, 1, 3).reshape(b, t, n * d)
    if "W_out" in found:
        out = out @ found["W_out"].value + (found["b_out"].value if "b_out" in found else 0.0)
    return out


def projected(found: dict[str, Role], x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The queries, keys and values ``x W + b`` (a bias where the module has one)."""

    def proj(r: str) -> np.ndarray:
        b = found.get(BIAS[r])
        out: np.ndarray = x @ found[r].value + (b.value if b is not None else 0.0)
        return out

    q, k, v = (proj(r) for r in QKV)
    return q, k, v


def unmasked(spec: Any, got: dict[str, Any], found: dict[str, Role], x: np.ndarray) -> np.ndarray:
    """``softmax(Q Kᵀ / √d) V`` of the projections, no mask: an ``at_size`` for a lesson with nothing more."""
    return attend(*projected(found, x), False)


def causal(spec: Any, got: dict[str, Any], found: dict[str, Role], x: np.ndarray) -> np.ndarray:
    """Causal attention of the projections: an ``at_size`` for a lesson with nothing more."""
    return attend(*projected(found, x), True)


def wrapped(found: dict[str, Role], x: np.ndarray, causal: bool) -> np.ndarray:
    """The book's wrapper of heads: each head its own full attention, joined along the last axis (and projected)."""
    n = range(found["W_query"].value.shape[0])
    return joined(np.stack([attend(*_head(x, found, h), causal) for h in n], axis=-3), found)


def turned(x: np.ndarray, style: str) -> np.ndarray:
    """RoPE on ``x``, ``(b, T, d)`` or ``(T, d)``: token ``i`` (from 0) turned by ``i θ_p``, paired by ``style``."""
    t, d = x.shape[-2], x.shape[-1]
    angle = np.arange(t)[:, None] * (BASE ** (-2.0 * np.arange(d // 2) / d))[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    if x.ndim == 2:
        return turn(x, cos, sin, style)
    return np.stack([turn(row, cos, sin, style) for row in x])


def turn(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, style: str) -> np.ndarray:
    """Rotate each pair of ``x[i, c]`` by its angle: ``(a, b) -> (a cos − b sin, b cos + a sin)``."""
    h = x.shape[1] // 2
    cols = (np.arange(h), np.arange(h) + h) if style == "half" else (np.arange(0, 2 * h, 2), np.arange(1, 2 * h, 2))
    a, b = x[:, cols[0]], x[:, cols[1]]
    out = np.empty_like(x)
    out[:, cols[0]], out[:, cols[1]] = a * cos - b * sin, b * cos + a * sin
    return out
