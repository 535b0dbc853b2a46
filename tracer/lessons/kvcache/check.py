"""Lesson kvcache as ``attn-trace check`` sees it.

The student writes a module with a key/value cache, driven through a generation call by call (:data:`CALLS`).

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracer.compare.check import rebuild, resizeref
from tracer.compare.check.lessons import GENERATION, Spec

if TYPE_CHECKING:
    from types import ModuleType

    from torch import Tensor

    from tracer.compare.check.model import Role

CALLS = ((1, 2), (3, 3), (4, 4), (5, 6))
"""The generation as the check drives it: the first and last token (1-based) of each call.

A prompt of two tokens, tokens 3 and 4 one at a time, then tokens 5 and 6 in
one call (a prompt fed in pieces, a draft being verified): a mask that is not
offset to the new tokens' positions shows on a single token, one sliced
``mask[:n, :n]`` only on a call of several (``tracer.compare.check.generation``).
"""


AGAIN = ((1, 3), (4, 4), (5, 5), (6, 6), (7, 8))
"""The second generation: 8 tokens, a prompt of three, three single tokens, then two at once."""


def rebuilds(spec: Spec) -> tuple[dict[str, Any], ...]:
    """One second build one component wider, driven through :data:`AGAIN`."""
    return ({**rebuild.widths(spec, spec.d_out + 1), **rebuild.base(spec), "tokens": AGAIN[-1][1], "calls": AGAIN},)


def plug(
    spec: Spec, pipeline: ModuleType, x: Tensor, w: dict[str, Tensor], roles: dict[str, Role], info: dict[str, Any]
) -> dict[str, Any]:
    """The student's projections as the pipeline's weights, generated in the check's calls."""
    extra: dict[str, Any] = pipeline.prepare(x, d_out=spec.d_out)
    extra.update(weights=w, weights_meta=info, spans=list(spec.calls))
    return extra


CHECK = Spec(
    "kvcache",
    ("d_in", "d_out", "context_length"),
    (3, 2, 6),
    123,
    3,
    2,
    1,
    True,
    (),  # every call's context rows: tracer.compare.check.generation drives the generation
    driver=GENERATION,
    calls=CALLS,
    rebuilds=rebuilds,
    at_size=resizeref.causal,
    plug=plug,
)
