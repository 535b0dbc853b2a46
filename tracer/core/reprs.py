"""The ``repr`` of a trace and of a step: short, and the same text on every machine.

A repr is what a REPL echoes and what Jupyter shows as ``text/plain``, so it
follows the rule every page follows (:mod:`tracer.core.portable`): a library
result (a BLAS matrix product, torch's softmax) prints as its loop form's
value, and a bounded check as its bound, because their raw last bits depend on
the CPU.  Values print at the report's decimals (:func:`tracer.core.fmt.shown`).
The exact value is one attribute away: ``step.value``.

    >>> import tracer
    >>> t = tracer.trace_self_attention()
    >>> t  # doctest: +NORMALIZE_WHITESPACE
    Trace(lesson='simple', tokens=['Your', 'journey', 'starts', 'with', 'one', 'step'],
          query=2, dtype='float32', 56 nodes, 1689 steps)
    >>> t["mat.omega[2,1]"]  # X @ X.T by BLAS: printed as its loop form, omega[2,1]
    Step(mat.omega[2,1] = 0.9544, op='matmul', stage='matrix')
    >>> t["check.omega"]  # the residual is this machine's; the bound is the maths'
    Step(check.omega = ≤ 5.4e-07, op='maxabsdiff', stage='matrix')
"""

from __future__ import annotations

import numpy as np

from tracer.core import fmt, portable
from tracer.core.trace import Step, Trace

SHOWN_TOKENS = 6
"""A trace's repr lists up to this many tokens, then the last one after ``…``."""

LONGEST_TOKEN = 20
"""Longer tokens (a file's text) are cut to this many characters in a repr."""


def _token(text: str) -> str:
    cut = text if len(text) <= LONGEST_TOKEN else text[: LONGEST_TOKEN - 1] + "…"
    return repr(cut)


def _tokens(tokens: list[str]) -> str:
    if len(tokens) <= SHOWN_TOKENS:
        return "[" + ", ".join(map(_token, tokens)) + "]"
    head = ", ".join(map(_token, tokens[: SHOWN_TOKENS - 1]))
    return f"[{head}, …, {_token(tokens[-1])}] ({len(tokens)} tokens)"


def trace_repr(trace: Trace) -> str:
    """``Trace(lesson=..., tokens=[...], query=..., dtype=..., N nodes, M steps)``: what the trace is, no values."""
    lesson = trace.meta.get("lesson") or trace.meta.get("source", {}).get("kind", "?")
    return (
        f"Trace(lesson={str(lesson)!r}, tokens={_tokens(trace.tokens)}, query={trace.query}, "
        f"dtype={trace.dtype!r}, {len(trace.nodes)} nodes, {len(trace)} steps)"
    )


def _from_library(trace: Trace, name: str, library: set[str]) -> bool:
    """Whether node ``name`` is, or is computed from, a checked library result."""
    nodes = {n.name: n for n in trace.nodes}
    seen: set[str] = set()
    todo = [name]
    while todo:
        n = todo.pop()
        if n in library:
            return True
        if n in seen or n not in nodes:
            continue
        seen.add(n)
        todo.extend(a.node for a in nodes[n].args)
    return False


def shown_value(step: Step) -> str:
    """The step's value as pages print it: a number, a check's bound, or a slice's dtype and shape."""
    trace, node = step._trace, step.node
    if node.op == portable.CHECK:
        return portable.check_text(node)
    if not step.is_element:
        return f"<{node.value.dtype} {list(np.shape(step.value))}>"
    if _from_library(trace, node.name, set(portable.loop_forms(trace))):
        node = portable.shown(trace).node(node.name)
    return fmt.shown(float(node.value[step.index]))


def step_repr(step: Step) -> str:
    """``Step(id = value, op=..., stage=...)`` with the value as pages print it (:func:`shown_value`)."""
    return f"Step({step.id} = {shown_value(step)}, op={step.op!r}, stage={step.stage!r})"
