"""A teacher's own pipeline: ``module:function`` (or ``path/to/file.py:function``) -> a trace.

The function is called as ``function(inputs, tokens, query, dtype, meta)``
(a torch tensor T x d, token labels, the 1-based focus query, a torch dtype
and the metadata to pass on) and returns the :class:`~tracer.core.trace.Trace` its
:class:`~tracer.record.recorder.Recorder` made.  Its module's ``NARRATIVE``
(``{"en": {...}, "zh": {...}}``, the structure of
:func:`tracer.present.narrative.from_dict`) travels in the trace's metadata, so
reports need nothing else.  See ``docs/pipelines.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.record import loader
from tracer.record.inputs import Example


def load(spec: str) -> tuple[Callable[..., Any], dict[str, Any], str]:
    """The function named by ``spec``, its module's ``NARRATIVE`` and the pipeline's name."""
    where, func = loader.split(spec, "spec")
    module = loader.module(where, "pipeline")
    fn = getattr(module, func, None)
    if not callable(fn):
        raise InputError(f"pipeline module {where} has no function {func!r}")
    story = getattr(module, "NARRATIVE", None)
    if not isinstance(story, dict) or not story:
        raise InputError(f"pipeline module {where} has no NARRATIVE dict ({{'en': {{...}}, ...}})")
    return fn, story, loader.short_name(where, func)


def run(spec: str, ex: Example) -> Trace:
    """Run the pipeline ``spec`` on a validated example."""
    fn, story, name = load(spec)
    values, dt, meta = ex.for_pipeline()
    meta.update(query=ex.query, tokens=ex.tokens)
    try:
        trace = fn(values, list(ex.tokens), ex.query, dt, dict(meta))
    except KeyboardInterrupt:  # the person at the keyboard, not the pipeline
        raise
    except BaseException as e:  # SystemExit(0) too: a pipeline that exits has not made a trace
        raise InputError(f"pipeline {spec} failed: {loader.describe(e)}") from None
    if not isinstance(trace, Trace):
        raise InputError(f"pipeline {spec} returned {type(trace).__name__}, not a Trace")
    trace.meta.setdefault("lesson", name)
    trace.meta.setdefault("query", ex.query)
    trace.meta.setdefault("tokens", list(ex.tokens))
    trace.meta["narrative"] = story
    return trace
