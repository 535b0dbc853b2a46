"""Lesson causal as ``attn-trace check`` sees it.

The student writes the book's ``CausalAttention``, called on a batch of two, on a shorter sequence and in training mode.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracer.compare.check import rebuild, resizeref
from tracer.compare.check.lessons import Gradients, Q, Spec, qkv

if TYPE_CHECKING:
    from types import ModuleType

    from torch import Tensor

    from tracer.compare.check.model import Role


def plug(
    spec: Spec, pipeline: ModuleType, x: Tensor, w: dict[str, Tensor], roles: dict[str, Role], info: dict[str, Any]
) -> dict[str, Any]:
    """The student's projections as the pipeline's weights (and as its module's)."""
    extra: dict[str, Any] = pipeline.prepare(x, d_out=spec.d_out)
    extra.update(weights=w, weights_meta=info, module=w)
    return extra


CHECK = Spec(
    "causal",
    ("d_in", "d_out", "context_length", "dropout"),
    (3, 2, 6, 0.5),
    123,
    3,
    2,
    1,
    True,
    (
        *qkv("batch."),
        Q("omega", "scores", "batch.omega", True, "s"),
        Q("masked", "mask", "batch.neg.omega", True, "s", after=("masked_scaled",)),
        Q("scaled", "scaling", "scaled", True, "s", after=("masked_scaled",)),
        Q("masked_scaled", "scaling", "batch.neg.scaled", True, "s", after=("alpha",)),
        Q("alpha", "weights", "batch.causal.alpha"),
        Q("dropped", "dropout", "dropout.alpha", run="train"),
        Q("z", "context", "batch.z"),
        Q("short", "mask", "batch.z", run="short"),
    ),
    short=4,
    dropout=0.5,
    causal=True,
    trained=True,
    rebuilds=rebuild.each_head_wider,
    at_size=resizeref.causal,
    plug=plug,
    gradients=Gradients(
        "ddropout.z",
        "causal.alpha",
        "ddropout.alpha",
        "dneg.scaled.dot",
        "dneg.scaled",
        "dneg.omega",
        "domega",
        kept="ddropout.kept",
        dropped="dcausal.alpha",
        keep="dropout.keep",
        rate=0.5,
        undropped=(("dropout", 0.0),),
        wider=(("d_out", 3),),
    ),
)
