"""The Python API: trace a lesson, load a saved trace.

This is the one module that ties inputs, lessons (from :mod:`tracer.record.registry`) and
files together; the CLI is a thin layer over it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracer.core.trace import Trace
from tracer.record import inputs as given
from tracer.record import registry
from tracer.record.inputs import Example

DEFAULT_LESSON = "simple"
"""The lesson :func:`trace_self_attention` traces, and the commands' ``--lesson`` when none is given: the
tutorial's.  The one place outside ``tracer/lessons/`` that names a lesson (``tests/test_layers.py``)."""


def trace_self_attention(
    inputs: Any = None,
    tokens: Any = None,
    query: int | None = None,
    dtype: Any = "float32",
    backward: bool = False,
    grad_output: Any = None,
) -> Trace:
    """Trace simple self-attention (no trainable weights), the tutorial's lesson.

    ``inputs`` is a T x d array-like (nested lists, numpy, torch); ``None``
    means the tutorial's six tokens.  ``tokens`` labels the rows (default:
    the tutorial's words, or ``t1..tT``).  ``query`` is the 1-based focus row
    the reports dwell on (default 2, or 1 for a single token); ``dtype`` is ``torch.float32`` (default, as in the
    tutorial) or ``torch.float64``, or their names.  ``backward=True`` traces
    the backward pass too (``docs/step-ids.md``), from the gradient of
    L = ½ Σ z² or from ``grad_output``, the upstream gradient of z (T x d).
    """
    back = {"backward": True} if backward else {}
    back |= {"grad_output": grad_output} if grad_output is not None else {}
    return trace_lesson(DEFAULT_LESSON, inputs=inputs, tokens=tokens, query=query, dtype=dtype, **back)


def trace_lesson(name: str, **options: Any) -> Trace:
    """Trace lesson ``name`` (see ``attn-trace lessons``; a package's own lessons included).

    Takes the options of :func:`trace_self_attention` plus the lesson's own,
    which its ``Options`` dataclass documents (for example ``weights`` and
    ``d_out`` for lesson trainable), and ``backward=True`` or
    ``grad_output=...`` for a lesson with a backward pass.
    """
    return registry.get(name).trace(**options)


def example(
    inputs: Any = None,
    tokens: Any = None,
    query: int | None = None,
    dtype: Any = "float32",
    source: dict[str, Any] | None = None,
) -> Example:
    """Validate options into an :class:`~tracer.record.inputs.Example` (``None`` inputs: the tutorial's)."""
    return given.example(inputs, tokens, query, dtype, source)


def run(lesson: str, ex: Example, **lesson_options: Any) -> Trace:
    """Run a registered lesson on a validated example, with the lesson's own options."""
    return registry.get(lesson).run(ex, **lesson_options)


def load(path: str | Path) -> Trace:
    """Read a trace file written by :meth:`Trace.save` or ``attn-trace trace``."""
    from tracer.core.serialize import load as _load

    return _load(path)
