"""Torch functions written in Python that capture opens up, so their steps are the user's: ``nn.MultiheadAttention``.

``nn.MultiheadAttention`` — the class most code uses — runs
``F.multi_head_attention_forward``, a Python function that asks the active
``TorchFunctionMode`` to handle it whole (``has_torch_function``).  Recorded
whole it would be one opaque step.  Instead the mode runs that very function
with the mode active again, so each torch call it makes is recorded like the
user's own: the in-projection (``F.linear`` of the packed weight, or of the
three separate ones) and its split into q, k and v, the heads split by
``view``/``transpose``, the scaling of the queries, the masks made additive
(a boolean ``attn_mask`` or ``key_padding_mask`` becomes ``-inf`` where
``True``, a float mask is added as it is), ``baddbmm``/``bmm`` of queries and
keys, ``softmax``, dropout, the weights times the values, the heads joined,
the out-projection, and the weights averaged over the heads
(``average_attn_weights``); with ``need_weights=False``, torch's
``scaled_dot_product_attention``, decomposed as everywhere else.

To run the function with the mode active without it asking the mode again,
it is called through a copy whose globals answer ``has_torch_function`` with
False: the same code object, the same torch calls, in the same order, so the
result is the result without capture, bit for bit.  Its frames (and those of
the in-projection helpers) count as user frames while it runs, so the steps
are named after torch's own variables, mapped to the documented names (``attn.q``, ``attn.scores``,
``attn.weights``: :func:`tracer.record.capture.naming._documented`),
under the path of the module that ran it.  Torch's fast path for evaluation
under ``torch.no_grad()`` (``torch._native_multi_head_attention``) is not
taken while a capture is active: ``nn.MultiheadAttention`` skips it whenever
a ``TorchFunctionMode`` is active, and runs this function instead.  That
path computes the same attention with other kernels, so its last bits may
differ from the fast path's (they agreed in the tests).
"""

from __future__ import annotations

import types
from typing import Any

import torch.nn.functional as F

from tracer.record.capture import site
from tracer.record.capture.session import Session

OPEN = {"multi_head_attention_forward"}
"""The torch functions (by name) that are run opened up."""

_HELPERS = ("_in_projection_packed", "_in_projection", "_canonical_mask")


def can_open(func: Any) -> bool:
    """Whether ``func`` is a plain Python function (its code and globals are there to run)."""
    return isinstance(func, types.FunctionType) and func.__code__ not in site.OPENED


def run(mode: Any, s: Session, func: types.FunctionType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``func`` with ``mode`` active, its torch calls recorded under the path of the module running it."""
    code = func.__code__
    clone = types.FunctionType(
        code, {**func.__globals__, "has_torch_function": _never}, func.__name__, func.__defaults__, func.__closure__
    )
    clone.__kwdefaults__ = func.__kwdefaults__
    codes = {code} | {c for h in _HELPERS if (c := getattr(getattr(F, h, None), "__code__", None)) is not None}
    added = codes - site.OPENED
    site.OPENED.update(added)
    s.opened.append(s.library_module or "mha")
    try:
        with mode:
            return clone(*args, **kwargs)
    finally:
        s.opened.pop()
        site.OPENED.difference_update(added)


def _never(*_: Any) -> bool:
    """``has_torch_function`` of the copy: the mode is already handling this call."""
    return False
