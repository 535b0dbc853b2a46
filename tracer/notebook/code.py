"""What every lesson's notebook code shares: literals from the trace, and the setup cell.

Traced values are embedded with :func:`tracer.fmt.literal`, which reads back
to the very same number, so the notebook's check compares torch's result with
exactly what attn-trace recorded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import fmt
from ..trace import Trace

Cell = str
"""The source of one code cell."""

SHOW = '''def text(t):
    """The numbers of a tensor, rows separated by ` | `."""
    if t.dim() > 1:
        return " | ".join(text(row) for row in t.reshape(-1, t.shape[-1]))
    return "  ".join(f"{v:.{DECIMALS}f}" for v in t.tolist())


def show(name, ours, traced):
    """Print torch's value beside the traced one (step id `name`), and check that they agree."""
    traced = torch.tensor(traced, dtype=dtype)
    ours = torch.as_tensor(ours, dtype=dtype).reshape(traced.shape)
    print(name)
    print("  torch :", text(ours))
    print("  traced:", text(traced))
    print(f"  max |torch - traced| = {(ours - traced).abs().max().item():.2e}")
    assert torch.allclose(ours, traced, rtol=1e-5, atol=1e-6, equal_nan=True), name'''


def literal(value: Any, dtype: str, indent: str = "") -> str:
    """An array (or number) of the trace as a nested Python list; the rows of a matrix on lines of their own."""
    a = np.asarray(value)
    if a.ndim == 0:
        return fmt.literal(float(a), dtype)
    if a.ndim == 1:
        return "[" + ", ".join(fmt.literal(float(v), dtype) for v in a) + "]"
    inner = indent + "    "
    rows = ",\n".join(inner + literal(row, dtype, inner) for row in a)
    return f"[\n{rows},\n{indent}]"


def traced(trace: Trace, step_id: str) -> str:
    """The value of step ``step_id`` as a literal."""
    return literal(trace[step_id].value, trace.dtype)


def check(trace: Trace, name: str, expr: str) -> str:
    """The line that prints ``expr`` (torch) beside step ``name`` (traced) and checks them."""
    return f'show("{name}", {expr}, {traced(trace, name)})'


def setup(trace: Trace) -> Cell:
    """The first code cell: torch, the dtype and decimals, and the ``show`` helper."""
    return f"import torch\n\ndtype = torch.{trace.dtype}\nDECIMALS = {fmt.DECIMALS}\n\n\n{SHOW}\n"
