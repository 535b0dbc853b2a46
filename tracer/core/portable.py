"""What a page may print about library results: values and checks that are the same on every machine.

Every traced primitive is the same bits on every machine (single IEEE
operations, and a correctly rounded ``exp``).  A library result is not: a BLAS
matrix product or torch's softmax picks its kernel by CPU and thread count,
and its last bits move.  A lesson checks each library result against its loop
form with a ``maxabsdiff`` node that carries ``bound``, the largest
difference the maths allows (:mod:`tracer.core.bounds`).  So, for print:

* a library node's values are shown as its loop form's (:func:`shown`):
  the two are within the bound, far below the report's decimals, and only the
  loop form's are fixed;
* a bounded check is shown as ``≤ bound`` (:func:`check_text`), and only if
  the residual broke the bound (a real error, not rounding) as the residual.

A bounded check whose two operands are both traced (``attrs["forms"] ==
"traced"``: lesson flash's online softmax against the ordinary one, lesson
rope's scores with both positions shifted against the scores) is no library
result: its operands keep their own values, and it prints as ``residual ≤
bound``, since the residual is the same on every machine too.

The trace keeps every exact value: ``trace["check.omega"].value`` is this
machine's residual, and ``trace.tensor("mat.omega")`` the library's result.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tracer.core import fmt, recompute
from tracer.core.predict import predict
from tracer.core.trace import Node, Trace

CHECK = "maxabsdiff"
TRACED = "traced"
"""``attrs["forms"]`` of a bounded check of two traced forms (lesson flash's online and ordinary softmax, rope's shift):
both are exact on every machine, so neither is replaced and the residual is printed beside the bound."""


def bound(node: Node) -> float | None:
    """The bound a check node carries, or None (a check of two traced forms, exact everywhere)."""
    b = node.attrs.get("bound") if node.op == CHECK else None
    return float(b) if isinstance(b, int | float) else None


def within(node: Node) -> bool:
    """True unless ``node`` is a bounded check whose residual broke its bound."""
    b = bound(node)
    return b is None or float(node.value) <= b


def check_text(node: Node, decimals: int = fmt.DECIMALS) -> str:
    """A check's value for print: ``≤ 5.4e-07`` for a bounded one, else the residual (``2.98e-08``).

    The residual is as precise as ``decimals`` ask (:func:`fmt.difference`);
    a bound is an order of magnitude and keeps one digit.
    """
    b = bound(node)
    v = float(node.value)
    if b is None:
        return fmt.difference(v, decimals)
    if node.attrs.get("forms") == TRACED:
        return f"{fmt.difference(v, decimals)} {'≤' if v <= b else '>'} {fmt.sci(b, 1)}"
    if v <= b:
        return f"≤ {fmt.sci(b, 1)}"
    return f"{fmt.difference(v, decimals)} > {fmt.sci(b, 1)}"


def loop_forms(trace: Trace) -> dict[str, str]:
    """Library node -> its loop form, read from the bounded checks (``mat.omega`` -> ``omega``)."""
    out: dict[str, str] = {}
    for node in trace.nodes:
        if bound(node) is not None and len(node.args) == 2 and node.attrs.get("forms") != TRACED:
            lib, loop = node.args[0].node, node.args[1].node
            if trace.node(lib).value.shape == trace.node(loop).value.shape:
                out[lib] = loop
    return out


def shown(trace: Trace) -> Trace:
    """``trace`` with each checked library node holding its loop form's values: what pages print.

    A step computed from a library node (the sums of ``torch.alpha``'s
    weights, the split of a fused projection into q, k and v) is recomputed
    from the values shown, when its op is exact (:mod:`tracer.core.predict`,
    :mod:`tracer.core.recompute`).  Nothing else changes (ids, ops, formulas,
    checks), so every renderer can take this trace instead of the original.
    A trace without bounded checks (an older file) comes back as it is.
    Each trace is shown once (the result is kept while ``trace`` lives and its meta is unchanged), so
    every language and format of its report reads the same shown trace; its
    verdict is the recorded trace's (:meth:`Trace.for_print`), the one ``verify`` gives.
    """
    kept = trace.shown_form
    if kept is not None and kept.meta == trace.meta:  # meta is a plain dict: kept only while it is unchanged
        return kept
    forms = loop_forms(trace)
    if not forms:
        return trace
    done: dict[str, np.ndarray] = {}
    axes_of = {n.name: n.axes for n in trace.nodes}
    changed: set[str] = set()
    nodes = []
    for n in trace.nodes:
        value = n.value
        if n.name in forms:
            value = trace.node(forms[n.name]).value.astype(n.value.dtype)
        elif n.op != CHECK and any(a.node in changed for a in n.args):
            args = [a.to_json() for a in n.args]
            again = predict(n.op, n.axes, n.value.shape, args, n.attrs, done, n.value.dtype, axes_of=axes_of)
            if again is None:  # a layout op, a mask, an elementwise op read through index arithmetic
                again = recompute.exact(n, done)
            value = n.value if again is None or again.shape != n.value.shape else again
        if value is not n.value:
            changed.add(n.name)
            n = dataclasses.replace(n, value=np.array(value, dtype=n.value.dtype))
        done[n.name] = n.value
        nodes.append(n)
    trace.shown_form = trace.for_print(nodes)
    return trace.shown_form


def canonical(trace: Trace) -> Trace:
    """What of ``trace`` is the same on every machine: :func:`shown`, with each bounded check holding its bound.

    A check whose residual broke its bound keeps the residual, so comparing
    two canonical traces exactly (as the snapshot plugin does) still fails
    on a real disagreement.  Both library results being within their bound
    of the same loop form also puts them within twice the bound of each other.
    """
    out = []
    for n in shown(trace).nodes:
        b = bound(n)
        if b is not None and within(n):
            n = dataclasses.replace(n, value=np.array(b, dtype=n.value.dtype))
        out.append(n)
    return Trace(out, trace.meta)
