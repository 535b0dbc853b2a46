"""An interim recorder of the student's tensors, until torch capture is available.

A :class:`torch.overrides.TorchFunctionMode` that keeps a copy of every
floating-point tensor a torch function returns while the student's forward
runs, with the function's name and the line of the student's file that called
it.  ``F.scaled_dot_product_attention`` is taken apart into its documented
steps (scores, scale, mask, softmax, dropout, weighted values) so a student
who calls it is compared stage by stage like everyone else.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from tracer.compare.check.model import Seen

_SKIP = {"detach", "numpy", "clone", "contiguous", "__get__", "size", "dim", "bool", "to", "float"}


class Probe(TorchFunctionMode):
    """Record every floating-point tensor returned inside the ``with`` block (see module docstring)."""

    def __init__(self, source: str | None) -> None:
        super().__init__()
        self.source = Path(source).name if source else None
        self.seen: list[Seen] = []
        self._count: Counter[str] = Counter()

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        raw = getattr(func, "__name__", str(func))
        name = raw if raw.startswith("__") else raw.rstrip("_")
        if func is torch.nn.functional.scaled_dot_product_attention:
            return self._sdpa(*args, **kwargs)
        out = func(*args, **kwargs)
        if raw == "__setitem__" and args:  # the tensor written into, as it stands after the write
            self.keep("setitem", args[0])
        elif name not in _SKIP:
            self.keep(name, out)
        return out

    def keep(self, op: str, out: Any) -> None:
        """Record ``out`` (a tensor, or a tuple of tensors) as made by ``op``."""
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel():
                self._count[op] += 1
                n = self._count[op]
                ident = op if n == 1 else f"{op}_{n}"
                value = t.detach().to(torch.float64).cpu().numpy().copy()
                self.seen.append(Seen(ident, op, value, self._where()))

    def _where(self) -> str:
        frame = sys._getframe(2)
        while frame is not None:
            name = Path(frame.f_code.co_filename).name
            ours = "tracer" in Path(frame.f_code.co_filename).parts[-3:-1]
            if (self.source is None or name == self.source) and not ours:
                return f"{name}:{frame.f_lineno}"
            frame = frame.f_back  # type: ignore[assignment]
        return ""

    def _sdpa(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        **_: Any,
    ) -> torch.Tensor:
        """``scaled_dot_product_attention`` by its documented semantics, each step recorded."""
        t, s = q.shape[-2], k.shape[-2]
        factor = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
        raw = q @ k.transpose(-2, -1)
        self.keep("sdpa.scores", raw)
        scores = raw * factor
        self.keep("sdpa.scaled", scores)
        if is_causal:
            keep = torch.ones(t, s, dtype=torch.bool).tril()
            scores = scores.masked_fill(~keep, float("-inf"))
            self.keep("sdpa.masked", scores)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                scores = scores.masked_fill(~attn_mask, float("-inf"))
            else:
                scores = scores + attn_mask
            self.keep("sdpa.masked", scores)
        weights = torch.softmax(scores, dim=-1)
        self.keep("sdpa.weights", weights)
        if dropout_p > 0:
            weights = torch.nn.functional.dropout(weights, dropout_p)
            self.keep("sdpa.dropout", weights)
        out = weights @ v
        self.keep("sdpa", out)
        return out


def as_array(t: torch.Tensor) -> np.ndarray:
    """A tensor's value as a float64 numpy array."""
    return t.detach().to(torch.float64).cpu().numpy().copy()
