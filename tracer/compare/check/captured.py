"""The student's run, captured: the tensors their code computed, read from a captured trace.

The check runs the student's code under :func:`tracer.record.capture.capture`
(torch capture, ``docs/capture.md``), so each tensor the code made is a node
named after the student's own variables (``attn_scores.masked_fill``,
``context_vec.view``), whose entries can be explained step by step like a
lesson's.  The student's tensors are the nodes holding values torch computed
(attrs ``func`` or ``library``), tensors created inside the call, and the
documented steps of ``F.scaled_dot_product_attention`` (scores, scaled,
masked, weights); the capture's own decompositions (products ``.p``, running
sums ``.s``, a softmax's ``.max``/``.shift``/``.exp``, a linear layer's
bias-free ``.xw``) are our left-to-right recomputations, not values the
student's code held, and are left out.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tracer.compare.check.model import Seen
from tracer.core.trace import Node, Trace

SDPA = "scaled_dot_product_attention"


def computed(node: Node) -> bool:
    """True for a node holding a value torch computed in the student's code."""
    return "func" in node.attrs or "library" in node.attrs


def seen(trace: Trace, sites: dict[str, str] | None = None) -> list[Seen]:
    """The student's tensors in the order they were made, each with the ``file.py:LINE`` that made it.

    ``sites`` maps node ids to lines (:meth:`Capture.sites`); a documented
    step of a library call (``out.scores`` of an SDPA call) takes its call's line.
    """
    sites = sites or {}
    nodes = {n.name: n for n in trace.nodes}
    out = []
    for node in trace.nodes:
        if node.op == "maxabsdiff" or (node.op == "input" and node.attrs.get("leaf") != "created"):
            continue
        if node.op != "input" and not computed(node) and not _sdpa_part(node.name, nodes):
            continue
        value = np.asarray(node.value, dtype=np.float64)
        out.append(Seen(node.name, node.op, value, _site(node.name, sites)))
    return out


def _site(name: str, sites: dict[str, str]) -> str:
    """The line of ``name``, or of its nearest recorded ancestor (``a.b.c`` -> ``a.b`` -> ``a``)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        got = sites.get(".".join(parts[:cut]))
        if got:
            return got
    return ""


def _sdpa_part(name: str, nodes: dict[str, Node]) -> bool:
    """True when the nearest recorded ancestor of ``name`` is an SDPA call (its documented steps)."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        parent = nodes.get(".".join(parts[:cut]))
        if parent is not None:
            return parent.attrs.get("library") == SDPA or parent.attrs.get("func") == SDPA
    return False


def capture(fn: Callable[..., Any], x: torch.Tensor, *more: Any, **named: Any) -> tuple[Any, Trace, dict[str, str]]:
    """``fn(x, *more, **named)`` captured: its result, the trace, and the line that made each node.

    The capture's stderr line about ops recorded whole is kept out of the
    check's output; the check lists them itself (``trace.meta["opaque"]``).
    """
    from tracer.record.capture import capture as start

    with contextlib.redirect_stderr(io.StringIO()), start(name="student") as cap:
        out = fn(x, *more, **named)
    return out, cap.trace, cap.sites()
