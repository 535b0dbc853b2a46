"""Lesson rope as ``attn-trace check`` sees it.

The student writes causal attention whose queries and keys are turned pair by pair (``style``: the pairing checked).

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
    """One second build two components wider: RoPE turns pairs, so the width stays even."""
    return rebuild.wider(spec, spec.d_out + 2)


def at_size(spec: Spec, got: dict[str, Any], found: dict[str, Role], x: np.ndarray) -> np.ndarray:
    """Causal attention of the queries and keys turned as the checked pairing turns them, in float64."""
    q, k, v = resizeref.projected(found, x)
    style = spec.style or "half"
    return resizeref.attend(resizeref.turned(q, style), resizeref.turned(k, style), v, True)


def plug(
    spec: Spec, pipeline: ModuleType, x: Tensor, w: dict[str, Tensor], roles: dict[str, Role], info: dict[str, Any]
) -> dict[str, Any]:
    """The student's projections as the pipeline's weights, turned with the checked pairing."""
    extra: dict[str, Any] = pipeline.prepare(x, d_out=spec.d_out, style=spec.style)
    extra.update(weights=w, weights_meta=info)
    return extra


CHECK = Spec(
    "rope",
    ("d_in", "d_out", "context_length"),
    (3, 4, 6),
    123,
    3,
    4,
    1,
    True,
    (
        *qkv(""),
        Q("q_rot", "rope", "rope.q"),
        Q("k_rot", "rope", "rope.k"),
        Q("omega", "scores", "omega", True, "s"),
        Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
        Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "causal.alpha"),
        Q("z", "context", "z"),
        Q("short", "mask", "z", run="short"),
    ),
    short=4,
    style="half",
    causal=True,
    trained=True,
    rebuilds=rebuilds,
    at_size=at_size,
    plug=plug,
)
