"""What a hand-written backward pass is given besides Q, K, V and dO: its further parameters, found by name.

Courses assign the backward pass of attention in two shapes (``docs/check.md``,
*Hand-written backward passes*): a function ``f(Q, K, V, dO)`` and an
``autograd.Function`` whose ``forward(ctx, Q, K, V)`` autograd differentiates
with the student's ``backward``.  Either may take more: whether the scores
are masked causally, and the dropout the weights went through (its mask of
kept entries and its rate).  Each further parameter is recognised by its
name (lower case, :data:`KINDS`); one that is required and not recognised is
refused in one line naming the names the check passes.  No torch here: the
parent decodes the kinds a child sends with :data:`KINDS` alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from tracer.compare.check.forwardargs import TABLE
from tracer.errors import InputError
from tracer.message import Message

CAUSAL = "flag"
KEEP = "dropout_keep"
RATE = "dropout_p"

KINDS: dict[str, tuple[str, ...]] = {
    CAUSAL: (*TABLE["true"], "use_causal", "use_causal_mask", "masked", "mask_future", "autoregressive"),
    KEEP: ("dropout_mask", "drop_mask", "keep", "keep_mask", "dropout_keep", "mask_dropout", "dmask", "dropmask"),
    RATE: ("p", "dropout_p", "dropout", "p_drop", "drop_p", "dropout_rate", "attn_dropout", "rate"),
}
"""Kind -> the parameter names it goes by: the causal flag (the names a ``forward`` is passed True by, and more),
the dropout mask (1 kept, 0 dropped), the rate p."""

KIND = {name: kind for kind, names in KINDS.items() for name in names}


def parameters(fn: Callable[..., Any], skip: int) -> list[inspect.Parameter]:
    """``fn``'s parameters after the first ``skip`` (the tensors; ``ctx`` too for a ``forward``), or none."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in params if p.kind in plain][skip:]


def bind(fn: Callable[..., Any], skip: int, who: str, dropout: bool) -> dict[str, str]:
    """The further parameters of ``fn`` the check passes, each with its kind (``{"causal": "causal"}``).

    A recognised parameter is passed whether or not it has a default (a
    ``causal=False`` default is the lesson's to set); the dropout mask and
    rate only when the lesson has dropout (``dropout``) or the parameter has
    no default.  A required parameter of no known name is an
    :class:`~tracer.errors.InputError` naming it.
    """
    given: dict[str, str] = {}
    for p in parameters(fn, skip):
        kind = KIND.get(p.name.lower())
        required = p.default is inspect.Parameter.empty
        if kind is None:
            if required:
                known = ", ".join(names[0] for names in KINDS.values())
                raise InputError(Message("trouble.grad_param", who=who, param=p.name, known=known))
            continue
        if kind == CAUSAL or dropout or required:
            given[p.name] = kind
    return given


def positional(fn: Callable[..., Any], skip: int, given: dict[str, str]) -> list[str]:
    """The parameters of ``given`` that must go by position (an ``autograd.Function``'s ``apply`` takes no keywords),
    in their order; every parameter before the last of them must then be one of ``given`` too."""
    names = [p.name for p in parameters(fn, skip)]
    if not given:
        return []
    last = max(names.index(n) for n in given)
    return names[: last + 1]
