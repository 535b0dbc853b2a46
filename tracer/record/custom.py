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

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.record.inputs import Example


def load(spec: str) -> tuple[Callable[..., Any], dict[str, Any], str]:
    """The function named by ``spec``, its module's ``NARRATIVE`` and the pipeline's name."""
    where, sep, func = spec.rpartition(":")
    if not sep or not where or not func:
        raise InputError(f"wants module:function or path/to/file.py:function, not {spec!r}", arg="spec")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise InputError(f"pipeline file {where} does not exist")
            loader = importlib.util.spec_from_file_location(f"attn_trace_pipeline_{path.stem}", path)
            assert loader is not None and loader.loader is not None
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            if "" not in sys.path:
                sys.path.insert(0, "")
            module = importlib.import_module(where)
    except InputError:
        raise
    except Exception as e:  # the teacher's code: any failure is reported in one line
        raise InputError(f"cannot import pipeline {where}: {type(e).__name__}: {e}") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise InputError(f"pipeline module {where} has no function {func!r}")
    story = getattr(module, "NARRATIVE", None)
    if not isinstance(story, dict) or not story:
        raise InputError(f"pipeline module {where} has no NARRATIVE dict ({{'en': {{...}}, ...}})")
    return fn, story, f"{Path(where).stem if where.endswith('.py') else where.rsplit('.', 1)[-1]}.{func}"


def run(spec: str, ex: Example) -> Trace:
    """Run the pipeline ``spec`` on a validated example."""
    import torch

    fn, story, name = load(spec)
    dt = {"float32": torch.float32, "float64": torch.float64}[ex.dtype]
    values = torch.tensor(ex.values, dtype=torch.float64).to(dt)
    t, d = ex.values.shape
    meta = {"dtype": ex.dtype, "n_tokens": t, "dim": d, "source": ex.source, "query": ex.query, "tokens": ex.tokens}
    try:
        trace = fn(values, list(ex.tokens), ex.query, dt, dict(meta))
    except Exception as e:
        raise InputError(f"pipeline {spec} failed: {type(e).__name__}: {e}") from None
    if not isinstance(trace, Trace):
        raise InputError(f"pipeline {spec} returned {type(trace).__name__}, not a Trace")
    trace.meta.setdefault("lesson", name)
    trace.meta.setdefault("query", ex.query)
    trace.meta.setdefault("tokens", list(ex.tokens))
    trace.meta["narrative"] = story
    return trace
