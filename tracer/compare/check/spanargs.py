"""What a generation passes each call of a student's module beyond the new tokens.

:mod:`.forwardargs` makes a call's further arguments for the tokens it is
given, positions counted from 0.  A call of a generation brings tokens
``a..b`` and sees the keys of tokens ``1..b``: its rotary tables and its
mask's rows are those of the new tokens, cut from the ones made for the
whole ``1..b`` (:func:`spans`, :data:`ROWS` says where each kind keeps its
positions).  The cache and the position are the generation's own
(:mod:`.generation`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tracer.compare.check.argvalues import MASKS as ALL_MASKS
from tracer.compare.check.argvalues import value
from tracer.compare.check.forwardargs import kinds, width
from tracer.compare.check.lessons import Spec
from tracer.errors import InputError

Span = Callable[[torch.Tensor, int, int], dict[str, Any]]
"""The keyword arguments of a generation's call on tokens ``a..b`` (1-based), given its new tokens."""

ROWS = {
    **dict.fromkeys(("cos", "sin", "cos_sin", *ALL_MASKS), -2),
    **dict.fromkeys(("freqs_cis", "freqs_pairs", "freqs_cos", "freqs_sin", "positions"), 0),
    **dict.fromkeys(("valid_lens", "position_ids"), -1),
    "cos_sin_half": 1,
}
"""The axis of the positions (a mask's: of the queries) in each kind's value (:mod:`.argvalues`)."""


def spans(module: Any, spec: Spec, d: int | None = None, heads: int | None = None) -> Span | None:
    """What a generation passes each call of ``module`` beyond the new tokens (None: nothing, or what it cannot).

    A call on tokens ``a..b`` sees the keys of tokens ``1..b``: the rotary
    tables are those of positions ``a − 1 .. b − 1``, and the mask is the
    lesson's rows ``a..b`` over keys ``1..b`` (Meta's ``(T_new, start_pos +
    T_new)``).  The cache and the position are the generation's own
    (:mod:`.generation`), which overrides what is made here for them.
    """
    try:
        given = kinds(module, spec)
    except InputError:
        return None
    if not given:
        return None
    rot = width(spec, d, heads)

    def span(x_new: torch.Tensor, a: int, b: int) -> dict[str, Any]:
        whole = torch.zeros(*x_new.shape[:-2], b, x_new.shape[-1], dtype=x_new.dtype)
        out: dict[str, Any] = {}
        for name, kind in given.items():
            got = x_new if kind == "tokens" else value(kind, whole, spec, rot)
            out[name] = _rows(kind.removeprefix("still_"), got, a - 1)
        return out

    return span


def _rows(kind: str, got: Any, start: int) -> Any:
    """``got`` (made for positions from 0) from position ``start`` on: the new tokens' rows."""
    if isinstance(got, tuple):
        return tuple(_rows(kind, g, start) for g in got)
    if not isinstance(got, torch.Tensor) or kind not in ROWS:
        return got
    axis = ROWS[kind]
    return got.narrow(axis, start, got.shape[axis] - start).contiguous()
