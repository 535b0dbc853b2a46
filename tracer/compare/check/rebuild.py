"""The sizes a lesson's second builds are made at: the parts every lesson's ``rebuilds`` is written with.

A lesson's check description names, in ``rebuilds``, the sizes :mod:`.resize`
builds the student's module at once more (``d_in + 1``, wider outputs,
``context_length = 9``, ``dropout = 0``, other windows, heads and groups),
and, in ``at_size``, the lesson's result at those sizes.  This module holds
the sizes every lesson shares, so that a lesson's own ``rebuilds`` says only
what is its own.
"""

from __future__ import annotations

from typing import Any

from tracer.compare.check.lessons import Spec

CONTEXT = 9
"""The second builds' ``context_length``: longer than the lesson's, so a mask written for 6 tokens shows."""
TOKENS = 7
"""How many tokens a second build is called on: fewer than the context, so the mask must be cut."""


def widths(spec: Spec, d_out: int) -> dict[str, int]:
    """``d_in`` one wider than the lesson's (or ``d_out`` for a module of one width) and ``d_out``."""
    return {"d_in": d_out if spec.d_in == spec.d_out else spec.d_in + 1, "d_out": d_out}


def base(spec: Spec) -> dict[str, Any]:
    """What every second build of a module shares: the longer context, no dropout, the lesson's heads."""
    return {"context_length": CONTEXT, "dropout": 0.0, "num_heads": spec.heads, "tokens": TOKENS}


def wider(spec: Spec, d_out: int) -> tuple[dict[str, Any], ...]:
    """The one second build of most lessons: ``d_out`` wide, on :data:`TOKENS` tokens of a longer context."""
    return ({**widths(spec, d_out), **base(spec)},)


def each_head_wider(spec: Spec) -> tuple[dict[str, Any], ...]:
    """One second build with each head one component wider: the ``rebuilds`` of a lesson with nothing else to vary."""
    return wider(spec, spec.d_out + spec.heads)
