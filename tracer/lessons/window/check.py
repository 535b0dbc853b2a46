"""Lesson window as ``attn-trace check`` sees it.

The student writes causal attention restricted to the last ``window_size`` keys.

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
    """Two second builds: the window one narrower (on 7 tokens), and one wider (on 9, the whole context)."""
    w, d_out = spec.window, spec.d_out + spec.heads
    sized = [(n, t) for n, t in ((w - 1, rebuild.TOKENS), (w + 1, rebuild.CONTEXT)) if n >= 1]
    return tuple({**rebuild.widths(spec, d_out), **rebuild.base(spec), "window_size": n, "tokens": t} for n, t in sized)


def at_size(spec: Spec, got: dict[str, Any], found: dict[str, Role], x: np.ndarray) -> np.ndarray:
    """Attention masked to the band ``i - w < j <= i``, in float64."""
    return resizeref.attend(*resizeref.projected(found, x), True, got.get("window_size", 0))


def plug(
    spec: Spec, pipeline: ModuleType, x: Tensor, w: dict[str, Tensor], roles: dict[str, Role], info: dict[str, Any]
) -> dict[str, Any]:
    """The student's projections as the pipeline's weights, at the module's window."""
    extra: dict[str, Any] = pipeline.prepare(x, d_out=spec.d_out, window=spec.window)
    extra.update(weights=w, weights_meta=info)
    return extra


CHECK = Spec(
    "window",
    ("d_in", "d_out", "context_length", "window_size"),
    (3, 2, 6, 3),
    123,
    3,
    2,
    1,
    True,
    (
        *qkv(""),
        Q("omega", "scores", "omega", True, "s"),
        Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
        Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "window.alpha"),
        Q("z", "context", "z"),
        Q("short", "mask", "z", run="short"),
    ),
    short=4,
    rebuilds=rebuilds,
    at_size=at_size,
    plug=plug,
)
