"""Weights for the lessons with trainable projections, built as the book builds them.

Every construction runs inside ``torch.random.fork_rng`` so tracing a lesson
never disturbs the caller's random state.

* ``rand``: ``torch.manual_seed(123)``, then ``W_query``, ``W_key``,
  ``W_value`` each ``torch.rand(d_in, d_out)``, in that order.
* ``linear``: ``torch.manual_seed(789)``, then three bias-free
  ``nn.Linear(d_in, d_out)`` layers built in the order query, key, value; a
  layer computes ``x @ weight.T``, so ``W_query = layer.weight.T``.
* a file: ``.json`` (``{"W_query": [[…]], "W_key": …, "W_value": …}``, each
  d_in x d_out), ``.pt`` (a dict of such tensors, ``weights_only``) or
  ``.npz`` (arrays named ``W_query``, ``W_key``, ``W_value``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tracer.errors import InputError

NAMES = ("W_query", "W_key", "W_value")
RAND_SEED = 123
"""The book's seed before its three ``torch.rand`` weight matrices."""
LINEAR_SEED = 789
"""The book's seed before its ``nn.Linear`` self-attention layers."""
MODULE_SEED = 123
"""The book's seed before its compact causal and multi-head modules, and before its dropout example."""


def rand(d_in: int, d_out: int, seed: int = RAND_SEED) -> dict[str, torch.Tensor]:
    """The book's ``torch.rand`` weights (seed 123, drawn query, key, value)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return {name: torch.rand(d_in, d_out) for name in NAMES}


def linear_layers(d_in: int, d_out: int, seed: int, count: int = 1, bias: bool = False) -> list[torch.nn.Linear]:
    """``count`` groups of query, key, value ``nn.Linear`` layers, built in that order after one seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return [torch.nn.Linear(d_in, d_out, bias=bias) for _ in range(3 * count)]


def linear(d_in: int, d_out: int, seed: int = LINEAR_SEED) -> dict[str, torch.Tensor]:
    """The book's ``nn.Linear`` weights (seed 789), as ``x @ W`` matrices (``weight.T``)."""
    layers = linear_layers(d_in, d_out, seed)
    return {name: layer.weight.detach().T.contiguous() for name, layer in zip(NAMES, layers, strict=True)}


def load(path: str | Path, d_in: int) -> dict[str, torch.Tensor]:
    """Weights from a file; each must be d_in x d_out with the same d_out, all finite."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"no such weights file: {p}")
    ext = p.suffix.lower()
    raw: dict[str, Any]
    try:
        if ext == ".json":
            raw = json.loads(p.read_text(encoding="utf-8"))
        elif ext == ".pt":
            raw = torch.load(p, map_location="cpu", weights_only=True)
        elif ext == ".npz":
            with np.load(p, allow_pickle=False) as z:
                raw = {k: z[k] for k in z.files}
        else:
            raise InputError(f"unsupported weights file type {ext or '(none)'!r}: use .json, .pt or .npz")
    except InputError:
        raise
    except Exception as e:  # an untrusted file can fail in many ways; all mean "unreadable"
        raise InputError(
            f"{p.name} is not a readable weights file: {str(e).splitlines()[0] if str(e) else e!r}"
        ) from None
    if not isinstance(raw, dict):
        raise InputError(f"{p.name} must hold W_query, W_key and W_value")
    missing = [n for n in NAMES if n not in raw]
    if missing:
        raise InputError(f"{p.name} lacks {', '.join(missing)}")
    out = {}
    for name in NAMES:
        try:
            t = torch.as_tensor(np.asarray(raw[name], dtype=np.float64))
        except (TypeError, ValueError):
            raise InputError(f"{p.name}: {name} is not a table of numbers") from None
        if t.ndim != 2 or t.shape[0] != d_in or t.shape[1] < 1:
            raise InputError(
                f"{p.name}: {name} must be {d_in} x d_out (the inputs have {d_in} dims), got {tuple(t.shape)}"
            )
        if not torch.isfinite(t).all():
            raise InputError(f"{p.name}: {name} has values that are not finite")
        out[name] = t
    widths = {t.shape[1] for t in out.values()}
    if len(widths) != 1:
        raise InputError(f"{p.name}: W_query, W_key and W_value must have the same number of columns")
    return out


def choose(spec: str, d_in: int, d_out: int) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Weights for ``--weights rand|linear|FILE`` and a description for the trace's metadata."""
    if d_out < 1 or d_out > 1024:
        raise InputError(f"d_out must be from 1 to 1024, got {d_out}")
    if spec == "rand":
        return rand(d_in, d_out), {"kind": "rand", "seed": RAND_SEED, "d_out": d_out}
    if spec == "linear":
        return linear(d_in, d_out), {"kind": "linear", "seed": LINEAR_SEED, "d_out": d_out}
    w = load(spec, d_in)
    return w, {"kind": "file", "name": Path(spec).name, "d_out": int(w["W_query"].shape[1])}
