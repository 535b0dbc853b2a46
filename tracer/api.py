"""The Python API: trace a lesson, load a saved trace.

This is the one module that ties inputs, pipelines and files together; the
CLI is a thin layer over it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from tracer.core.trace import Trace
from tracer.errors import InputError, unknown
from tracer.record.inputs import Example, tutorial, validate
from tracer.record.pipelines import LESSONS


def trace_self_attention(
    inputs: Any = None,
    tokens: Any = None,
    query: int | None = None,
    dtype: Any = "float32",
) -> Trace:
    """Trace simple self-attention (no trainable weights), the tutorial's lesson.

    ``inputs`` is a T x d array-like (nested lists, numpy, torch); ``None``
    means the tutorial's six tokens.  ``tokens`` labels the rows (default:
    the tutorial's words, or ``t1..tT``).  ``query`` is the 1-based focus row
    the reports dwell on (default 2, or 1 for a single token); ``dtype`` is ``torch.float32`` (default, as in the
    tutorial) or ``torch.float64``, or their names.
    """
    return trace_lesson("simple", inputs=inputs, tokens=tokens, query=query, dtype=dtype)


INPUT_OPTIONS = ("inputs", "tokens", "query", "dtype")


def trace_lesson(name: str, **options: Any) -> Trace:
    """Trace lesson ``name`` (see ``attn-trace lessons``).

    Takes the options of :func:`trace_self_attention` plus the lesson's own:
    ``weights`` (``"rand"``, ``"linear"`` or a file) and ``d_out`` for the
    lessons with trainable weights.
    """
    given = {k: options.pop(k) for k in INPUT_OPTIONS if k in options}
    return run(name, example(**given), **options)


def example(
    inputs: Any = None,
    tokens: Any = None,
    query: int | None = None,
    dtype: Any = "float32",
    source: dict[str, Any] | None = None,
) -> Example:
    """Validate options into an :class:`~tracer.record.inputs.Example` (``None`` inputs: the tutorial's)."""
    if inputs is None:
        inputs, default_tokens = tutorial()
        tokens = default_tokens if tokens is None else tokens
        source = source or {"kind": "tutorial"}
    return validate(inputs, tokens, query, dtype, source)


def run(lesson: str, ex: Example, **lesson_options: Any) -> Trace:
    """Run a lesson's pipeline on a validated example (``lesson_options`` go to the lesson's ``prepare``)."""
    if lesson not in LESSONS:
        raise InputError(unknown("lesson", lesson, LESSONS))
    module = importlib.import_module(LESSONS[lesson][0])
    values, dt, meta = ex.for_pipeline()
    extra = module.prepare(values, **lesson_options) if hasattr(module, "prepare") else {}
    if not hasattr(module, "prepare") and lesson_options:
        raise InputError(f"lesson {lesson!r} takes no option {', '.join(sorted(lesson_options))}")
    trace: Trace = module.build(values, ex.tokens, ex.query, dt, meta, **extra)
    return trace


def load(path: str | Path) -> Trace:
    """Read a trace file written by :meth:`Trace.save` or ``attn-trace trace``."""
    from tracer.core.serialize import load as _load

    return _load(path)
