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
