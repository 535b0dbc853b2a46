"""Lesson gqa as ``attn-trace check`` sees it.

The student writes grouped-query attention: four query heads reading two key/value groups.

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


def rebuilds(spec: Spec) -> tuple[dict[str, Any], ...]:
    """Two second builds, heads one component wider: one group more (as many query heads per group), one group."""
    groups, width = spec.args[-1], spec.head_dim + 1
    share = spec.heads // groups
    pairs = ((groups + 1) * share, groups + 1), (max(spec.heads - 1, 1), 1)  # one group more; multi-query
    base = rebuild.base(spec)
    return tuple({**rebuild.widths(spec, h * width), **base, "num_heads": h, "num_kv_groups": g} for h, g in pairs)


def at_size(spec: Spec, got: dict[str, Any], found: dict[str, Role], x: np.ndarray) -> np.ndarray:
    """Query head h reads key/value group ``h // (num_heads / num_kv_groups)``; joined and projected."""
    n, groups = got["num_heads"], got["num_kv_groups"]
    q, k, v = resizeref.projected(found, x)
    kh, vh = (np.repeat(resizeref.heads(a, groups), n // groups, axis=1) for a in (k, v))  # repeat_interleave
    return resizeref.joined(resizeref.attend(resizeref.heads(q, n), kh, vh, True), found)


def plug(
    spec: Spec, pipeline: ModuleType, x: Tensor, w: dict[str, Tensor], roles: dict[str, Role], info: dict[str, Any]
) -> dict[str, Any]:
    """The student's projections (and output projection) in place of the pipeline's own weights."""
    from tracer.compare.check.reference import tensor

    extra: dict[str, Any] = pipeline.prepare(x, d_out=spec.d_out, heads=spec.heads, groups=spec.args[-1])
    extra["weights"] = {**extra["weights"], **w}
    if "W_out" in roles:
        extra["weights"]["W_out"] = tensor(roles, "W_out")
    return extra


CHECK = Spec(
    "gqa",
    ("d_in", "d_out", "context_length", "num_heads", "num_kv_groups"),
    (3, 8, 6, 4, 2),
    123,
    3,
    8,
    4,
    True,
    (
        *qkv(""),
        Q("hq", "heads", "hq", True, "h", after=("alpha",)),
        Q("hk", "heads", "hk"),
        Q("hv", "heads", "hv"),
        Q("kh", "heads", "kh", True, "h", after=("alpha",)),
        Q("vh", "heads", "vh", True, "h", after=("z",)),
        Q("omega", "scores", "omega", True, "s"),
        Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
        Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "causal.alpha"),
        Q("z", "context", "z"),
        Q("concat", "merge", "concat", True, "o"),
        Q("out", "output", "out", False, "o"),
        Q("short", "mask", "out", run="short"),
    ),
    short=4,
    causal=True,
    rebuilds=rebuilds,
    at_size=at_size,
    plug=plug,
)
