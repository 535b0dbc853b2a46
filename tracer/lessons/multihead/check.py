"""Lesson multihead as ``attn-trace check`` sees it.

The student writes the book's multi-head module (or its wrapper of causal heads), checked with two heads eight wide.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tracer.compare.check import rebuild, resizeref
from tracer.compare.check.lessons import Q, Spec, qkv

if TYPE_CHECKING:
    from types import ModuleType

    from torch import Tensor

    from tracer.compare.check.model import Role


def at_size(spec: Spec, got: dict[str, Any], found: dict[str, Role], x: np.ndarray) -> np.ndarray:
    """Causal attention split into ``num_heads`` heads, joined, and projected when the module has ``W_out``."""
    n = got["num_heads"]
    q, k, v = (resizeref.heads(a, n) for a in resizeref.projected(found, x))
    return resizeref.joined(resizeref.attend(q, k, v, True), found)


def plug(
    spec: Spec, pipeline: ModuleType, x: Tensor, w: dict[str, Tensor], roles: dict[str, Role], info: dict[str, Any]
) -> dict[str, Any]:
    """The student's weights in the split heads, or per head when the module is the book's wrapper."""
    import torch

    from tracer.compare.check.reference import tensor

    extra: dict[str, Any] = pipeline.with_heads(x, spec.d_out, spec.heads)  # any number of heads
    if spec.form == "wrap":
        extra["wrap"] = w
        if "W_out" in roles:
            extra["wrap_out"] = {r: tensor(roles, r) for r in ("W_out", "b_out") if r in roles}
        return extra
    split = {**extra["split"], **w}
    if "W_out" in roles:
        split["W_out"] = tensor(roles, "W_out")
        bias = roles["b_out"].value if "b_out" in roles else np.zeros(spec.d_out)
        split["b_out"] = torch.tensor(bias, dtype=torch.float32)
    extra["split"] = split
    return extra


CHECK = Spec(
    "multihead",
    ("d_in", "d_out", "context_length", "dropout", "num_heads"),
    (3, 8, 6, 0.5, 2),
    123,
    3,
    8,
    2,
    True,
    (
        *qkv("split.", True, "p"),
        *(Q(f"h{n}", "heads", f"split.h{n}", False, "p") for n in ("q", "k", "v")),
        Q("omega", "scores", "split.omega", True, "s"),
        Q("masked", "mask", "split.neg.omega", True, "s"),
        Q("masked_scaled", "scaling", "split.neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "split.causal.alpha"),
        Q("z", "context", "split.z"),
        Q("concat", "merge", "split.concat", True, "o"),
        Q("proj", "output", "split.proj", True, "o"),
        Q("out", "output", "split.out", False, "o"),
        Q("short", "mask", "split.out", run="short"),
    ),
    short=4,
    dropout=0.5,
    causal=True,
    trained=True,
    rebuilds=rebuild.each_head_wider,
    at_size=at_size,
    plug=plug,
)
