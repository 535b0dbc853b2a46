"""attn-trace: every intermediate value of an attention computation, step by step.

    >>> import tracer
    >>> t = tracer.trace_self_attention()          # the tutorial's example
    >>> round(t["omega[2,1]"].value, 4)
    0.9544

    >>> tracer.diff(t, t).equal                    # compare two traces (or trace files)
    True

Names are imported lazily, so ``import tracer`` costs no torch import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracer import message as _message
from tracer.core import hooks as _hooks
from tracer.version import __version__

__all__ = [
    "InputError",
    "Step",
    "StepNotFound",
    "Trace",
    "TraceFormatError",
    "TracerError",
    "__version__",
    "capture",
    "check",
    "diff",
    "load",
    "trace_lesson",
    "trace_self_attention",
    "trace_torch",
]

_LAZY = {
    "Step": "tracer.core.trace",
    "Trace": "tracer.core.trace",
    "TracerError": "tracer.errors",
    "InputError": "tracer.errors",
    "TraceFormatError": "tracer.errors",
    "StepNotFound": "tracer.errors",
    "check": "tracer.compare.check",  # the function check(obj, lesson=...) -> CheckResult
    "diff": "tracer.compare.differ",  # the function; the module is `differ`, so `tracer.diff` names one thing
    "load": "tracer.api",
    "trace_lesson": "tracer.api",
    "trace_self_attention": "tracer.api",
    "capture": "tracer.record.capture",
    "trace_torch": "tracer.record.capture",
}

if TYPE_CHECKING:
    from tracer.api import load, trace_lesson, trace_self_attention
    from tracer.compare.check import check
    from tracer.compare.differ import diff
    from tracer.core.trace import Step, Trace
    from tracer.errors import InputError, StepNotFound, TraceFormatError, TracerError
    from tracer.record.capture import capture, trace_torch


def _display(obj: Any, include: Any = None, exclude: Any = None) -> dict[str, str]:
    from tracer.present.display import bundle

    return bundle(obj, include, exclude)


def _repr(obj: Any) -> str:
    from tracer.core.reprs import step_repr, trace_repr
    from tracer.core.trace import Trace

    return trace_repr(obj) if isinstance(obj, Trace) else step_repr(obj)


def _save(trace: Any, path: Any) -> None:
    from tracer.core.serialize import save

    save(trace, path)


def _verify(trace: Any) -> Any:
    from tracer.core.verify import verify

    return verify(trace)


def _check_text(result: Any, lang: str = "en", verbose: bool = False) -> str:
    from tracer.present.checktext import text

    return text(result, lang, verbose)


def _render(said: Any, lang: str) -> str:
    from tracer.present.messages import render

    return render(said, lang)


# Lower layers cannot import the layers that draw or write what they hold: those register here
# (see tracer.core.hooks): a trace's display, repr, file and verification, a check result's text.
_hooks.register("display", _display)
_hooks.register("repr", _repr)
_hooks.register("save", _save)
_hooks.register("verify", _verify)
_hooks.register("check_text", _check_text)
_message.install(_render)  # a message's words (tracer.message, in the lowest layer), from the string tables


def __getattr__(name: str) -> Any:
    if name == "plot":  # the matplotlib figures (tracer.plot): imported, with matplotlib, only when asked for
        import importlib

        module = importlib.import_module("tracer.plot")
        globals()["plot"] = module
        return module
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tracer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
