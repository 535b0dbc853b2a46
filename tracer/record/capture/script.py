"""``--torch FILE.py:FN``: run a user's function that builds and runs torch code, captured.

``FN`` takes no arguments: it sets its seed, builds its module and inputs,
and runs them; everything torch computes inside the call is captured, and
what it returns must be a tensor (the output).  A module-level
``NARRATIVE`` (``{"en": {...}, "zh": {...}}``, the structure of
``tracer.present.narrative.from_dict``, keyed by the trace's stages) tells
its report; without one the report gets a generic narrative.  Every way this
can go wrong (no such file or function, arguments wanted, an exception,
nothing computed, no tensor returned) is one :class:`~tracer.errors.InputError`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.message import Message
from tracer.record import loader
from tracer.record.capture import capture


def run(spec: str, tokens: Sequence[str] | None = None, query: int | None = None) -> Trace:
    """Capture ``FN()`` of ``spec`` and return its trace (its module's ``NARRATIVE`` in the metadata)."""
    where, func = loader.split(spec, "torch")
    module = loader.module(where, "torch code")
    fn = getattr(module, func, None)
    if fn is None:
        raise InputError(Message("capture.no_function", where=where, func=repr(func)))
    if not callable(fn):
        raise InputError(Message("capture.not_callable", where=where, func=func, type=type(fn).__name__))
    try:
        wanted = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
    except (TypeError, ValueError):
        wanted = []
    if wanted:
        raise InputError(Message("capture.must_take_no_arguments", spec=spec, wanted=", ".join(wanted)))
    name = loader.short_name(where, func)
    cap = capture(tokens, name, query)
    try:
        with cap:
            out = fn()
            cap.output = out
    except (InputError, KeyboardInterrupt):  # our own verdict, or the person at the keyboard
        raise
    except BaseException as e:  # the user's code: any failure, SystemExit included, is one line
        raise InputError(Message("capture.failed", spec=spec, type=type(e).__name__, error=str(e))) from None
    if not isinstance(out, torch.Tensor):
        raise InputError(Message("capture.returned_not_tensor_return", spec=spec, type=type(out).__name__))
    trace = cap.trace
    story = getattr(module, "NARRATIVE", None)
    if story is not None:
        if not isinstance(story, dict):
            raise InputError(Message("capture.narrative_must_dict", where=where))
        trace.meta["narrative"] = story
    trace.meta["torch"] = spec
    return trace
