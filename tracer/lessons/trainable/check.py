"""Lesson trainable as ``attn-trace check`` sees it.

The student writes a module built from ``d_in`` and ``d_out``, called on the six tokens, in eval and in training mode.

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
    """The student's projections as the pipeline's weights."""
    return {"weights": w, "weights_meta": info}


CHECK = Spec(
    "trainable",
    ("d_in", "d_out"),
    (3, 2),
    123,
    3,
    2,
    1,
    False,
    (
        *qkv(""),
        Q("omega", "scores", "omega", True, "s"),
        Q("scaled", "scaling", "scaled", False, "s"),
        Q("alpha", "weights", "alpha"),
        Q("z", "context", "z"),
    ),
    trained=True,
    rebuilds=rebuild.each_head_wider,
    at_size=resizeref.unmasked,
    plug=plug,
    gradients=Gradients("dz", "alpha", "dalpha", "dscaled.dot", "dscaled", "domega", "domega", wider=(("d_out", 3),)),
)
