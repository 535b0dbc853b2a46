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
from tracer.record import loader
from tracer.record.capture import capture


def run(spec: str, tokens: Sequence[str] | None = None, query: int | None = None) -> Trace:
    """Capture ``FN()`` of ``spec`` and return its trace (its module's ``NARRATIVE`` in the metadata)."""
    where, func = loader.split(spec, "torch")
    module = loader.module(where, "torch code")
    fn = getattr(module, func, None)
    if fn is None:
        raise InputError(f"{where} has no function {func!r}")
    if not callable(fn):
        raise InputError(f"{where}:{func} is not callable (it is a {type(fn).__name__})")
    try:
        wanted = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
    except (TypeError, ValueError):
        wanted = []
    if wanted:
        raise InputError(f"{spec} must take no arguments (it builds its own inputs), but it wants {', '.join(wanted)}")
    name = loader.short_name(where, func)
    cap = capture(tokens, name, query)
    try:
        with cap:
            out = fn()
            cap.output = out
    except InputError:
        raise
    except Exception as e:  # the user's code: any failure is one line
        raise InputError(f"{spec} failed: {type(e).__name__}: {e}") from None
    if not isinstance(out, torch.Tensor):
        raise InputError(f"{spec} returned {type(out).__name__}, not a tensor: return the output of your module")
    trace = cap.trace
    story = getattr(module, "NARRATIVE", None)
    if story is not None:
        if not isinstance(story, dict):
            raise InputError(f"{where}: NARRATIVE must be a dict ({{'en': {{...}}, ...}})")
        trace.meta["narrative"] = story
    trace.meta["torch"] = spec
    return trace
