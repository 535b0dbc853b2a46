"""An independent float64 reference for the simple lesson, written with plain numpy.

It shares no code with the pipeline: it recomputes every stage from the
inputs with textbook formulas, so a bug in the recorder or the pipeline shows
up as a mismatch here.
"""

from __future__ import annotations

import numpy as np


def simple(x: np.ndarray) -> dict[str, np.ndarray]:
    """Every node of the simple lesson, keyed by node name, in float64."""
    x = np.asarray(x, dtype=np.float64)
    _t, _d = x.shape
    prod = np.einsum("ik,jk->ijk", x, x)
    omega = x @ x.T
    ref: dict[str, np.ndarray] = {
        "x": x,
        "omega.p": prod,
        "omega.s": np.cumsum(prod, axis=2),
        "omega": omega,
    }
    ref["div.sum.s"] = np.cumsum(omega, axis=1)
    ref["div.sum"] = omega.sum(axis=1)
    ref["div.alpha"] = omega / omega.sum(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(omega)
        ref["naive.exp"] = e
        ref["naive.sum.s"] = np.cumsum(e, axis=1)
        ref["naive.sum"] = e.sum(axis=1)
        ref["naive.alpha"] = e / e.sum(axis=1, keepdims=True)
    m = omega.max(axis=1)
    shifted = omega - m[:, None]
    es = np.exp(shifted)
    alpha = es / es.sum(axis=1, keepdims=True)
    ref.update(
        {
            "stable.max": m,
            "stable.shift": shifted,
            "stable.exp": es,
            "stable.sum.s": np.cumsum(es, axis=1),
            "stable.sum": es.sum(axis=1),
            "alpha": alpha,
            "torch.alpha": alpha,
            "mat.omega": omega,
            "mat.alpha": alpha,
        }
    )
    for name in ("div.alpha", "naive.alpha", "alpha", "torch.alpha"):
        ref[f"{name}_sum.s"] = np.cumsum(ref[name], axis=1)
        ref[f"{name}_sum"] = ref[name].sum(axis=1)
    terms = np.einsum("ij,jk->ijk", alpha, x)
    ref["z.t"] = terms
    ref["z.s"] = np.cumsum(terms, axis=1)
    ref["z"] = alpha @ x
    ref["mat.z"] = alpha @ x
    return ref


def scaled(x: np.ndarray, c: float, dtype: str) -> dict[str, np.ndarray]:
    """The overflow stage's nodes (``scaled.*``) for inputs scaled by ``c``, in float64.

    An exp beyond the largest number of ``dtype`` is set to inf, as the dtype
    would hold it, so the naive softmax turns to nan where the trace's does.
    """
    big = float(np.finfo(np.dtype(dtype)).max)
    inner = simple(np.asarray(x, dtype=np.float64) * c)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(inner["omega"])
        e[e > big] = np.inf
        naive = e / e.sum(axis=1, keepdims=True)
    ref = {"scaled.c": np.asarray(float(c)), "scaled.x": inner["x"]}
    for name in ("omega.p", "omega.s", "omega", "stable.max", "stable.shift", "stable.exp", "stable.sum.s"):
        ref[f"scaled.{name}"] = inner[name]
    for name in ("stable.sum", "alpha", "alpha_sum.s", "alpha_sum"):
        ref[f"scaled.{name}"] = inner[name]
    with np.errstate(invalid="ignore"):
        ref.update(
            {
                "scaled.naive.exp": e,
                "scaled.naive.sum.s": np.cumsum(e, axis=1),
                "scaled.naive.sum": e.sum(axis=1),
                "scaled.naive.alpha": naive,
                "scaled.naive.alpha_sum.s": np.cumsum(naive, axis=1),
                "scaled.naive.alpha_sum": naive.sum(axis=1),
            }
        )
    return ref
