"""What the lesson's quantities become under a mistake, computed from the reference's own values.

Each function takes reference arrays (numpy, float64) and the names of their
axes, and returns what a program with one mistake would hold instead: the
softmax over another axis, the causal mask with a 0 fill or with the diagonal
hidden, heads joined without the transpose back, and so on.  The catalogue
(:mod:`tracer.compare.check.catalogue`) looks for these among the student's
tensors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def softmax(a: np.ndarray, axis: int) -> np.ndarray:
    """Softmax along ``axis`` (a row of only -inf gives NaN, as torch's does)."""
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(a, axis=axis, keepdims=True)
        e = np.exp(a - m)
        return np.asarray(e / e.sum(axis=axis, keepdims=True))


def softmaxes(a: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The softmax of ``a`` along each of its axes."""
    return [(ax, softmax(a, ax)) for ax in range(a.ndim)]


def future(axes: Sequence[str], shape: Sequence[int], diagonal: int = 1) -> np.ndarray:
    """True where key j lies ``diagonal`` or more past query i (the entries a causal mask hides)."""
    i, j = axes.index("i"), axes.index("j")
    ii = np.arange(shape[i]).reshape([-1 if d == i else 1 for d in range(len(shape))])
    jj = np.arange(shape[j]).reshape([-1 if d == j else 1 for d in range(len(shape))])
    return np.broadcast_to(jj - ii >= diagonal, shape)


def fill(a: np.ndarray, axes: Sequence[str], value: float, diagonal: int = 1) -> np.ndarray:
    """``a`` with the future entries (see :func:`future`) replaced by ``value``."""
    return np.where(future(axes, a.shape, diagonal), value, a)


def swap_ij(a: np.ndarray, axes: Sequence[str]) -> np.ndarray:
    """``a`` with its query and key axes exchanged."""
    return np.swapaxes(a, axes.index("i"), axes.index("j"))


def weigh(scores: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``scores @ values`` over the key axis (the last of ``scores``, the last but one of ``values``)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(np.matmul(scores, values))


def merge_untransposed(z: np.ndarray) -> np.ndarray:
    """Heads (h, b, T, d_h) laid out as (b, h, T, d_h) and viewed as (b, T, h·d_h) without the transpose back."""
    h, b, t, d = z.shape
    return np.ascontiguousarray(np.transpose(z, (1, 0, 2, 3))).reshape(b, t, h * d)


def merge(z: np.ndarray) -> np.ndarray:
    """Heads (h, b, T, d_h) joined the right way: (b, T, h·d_h)."""
    h, b, t, d = z.shape
    return np.transpose(z, (1, 2, 0, 3)).reshape(b, t, h * d)


def dropped_like(got: np.ndarray, base: np.ndarray, scale: float) -> bool:
    """True when ``got`` is ``base`` with some entries zeroed and the rest multiplied by ``scale``.

    Entries where ``base`` is zero or not finite say nothing and are skipped;
    at least one entry must be dropped and one kept.
    """
    if got.shape != base.shape:
        return False
    ok = np.isfinite(base) & (np.abs(base) > 1e-6)
    if not ok.any():
        return False
    g, b = got[ok], base[ok]
    zero = np.abs(g) <= 1e-7
    kept = np.isclose(g, b * scale, rtol=1e-4, atol=1e-6)
    return bool((zero | kept).all() and zero.any() and kept.any())
