"""Lesson flash as ``attn-trace check`` sees it.

The student writes a function of queries, keys, values and a block size, called at three sizes.

:data:`CHECK` is the lesson's check description (:class:`tracer.compare.check.lessons.Spec`):
the constructor the student writes, the sizes and seed it is built with, how it
is run, and the lesson's quantities in the order the lesson computes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tracer.compare.check import resizeref
from tracer.compare.check.lessons import QKV, Q, Spec

if TYPE_CHECKING:
    from tracer.compare.check.model import Role


def rebuilds(spec: Spec) -> tuple[dict[str, Any], ...]:
    """One more call: 3-wide heads, blocks of 3 keys over 8 tokens (the last block holds two)."""
    return ({"d": 3, "block_size": 3, "tokens": 8},)


def at_size(spec: Spec, got: dict[str, Any], found: dict[str, Role], x: np.ndarray) -> np.ndarray:
    """Causal attention of the queries, keys and values themselves (``x`` stacks them), in float64."""
    q, k, v = x
    return resizeref.attend(q, k, v, True)


CHECK = Spec(
    "flash",
    ("q", "k", "v", "block_size"),
    (2,),
    789,
    3,
    2,
    1,
    False,
    (
        Q("z", "context", "flash.z"),
        Q("z", "context", "flash.z", run="block"),
        Q("short", "context", "flash.z", run="short"),
    ),
    short=5,
    block=4,
    driver=QKV,
    rebuilds=rebuilds,
    at_size=at_size,
)
