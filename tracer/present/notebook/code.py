"""What every lesson's notebook code shares: literals from the trace, and the setup cell.

Traced values are embedded with :func:`tracer.core.fmt.literal`, which reads back
to the very same number, so the notebook's check compares torch's result with
exactly what attn-trace recorded.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from tracer.core import fmt
from tracer.core.trace import Trace
from tracer.record import registry

Cell = str
"""The source of one code cell."""


def lesson_cells(trace: Trace) -> dict[str, list[Cell]] | None:
    """Stage -> code cells of a registered lesson's trace, or ``None`` when the lesson writes none.

    The one source of the code a report shows (:mod:`tracer.present.views.code`)
    and a notebook runs (:mod:`tracer.present.notebook`): the lesson's own
    :meth:`~tracer.record.lesson.Lesson.notebook_cells`.  Lives here, beside
    the helpers the lessons' cells share, so that the views can read it
    without importing the notebook package, which builds on the views.
    """
    lesson = registry.of(trace)
    return lesson.notebook_cells(trace) if lesson is not None else None


SHOW = '''def text(t, indent=10):
    """The numbers of a tensor, a row per line (continuation lines indented), signs in a column of their own."""
    rows = t.reshape(-1, t.shape[-1]) if t.dim() > 1 else t.reshape(1, -1)
    return ("\\n" + " " * indent).join("  ".join(f"{v: .{DECIMALS}f}" for v in row.tolist()) for row in rows)


def show(name, ours):
    """Print torch's value beside the value attn-trace recorded for step `name`, and check that they agree."""
    traced = torch.tensor(TRACED[name], dtype=dtype)
    ours = torch.as_tensor(ours, dtype=dtype).reshape(traced.shape)
    print(name)
    print("  torch :", text(ours))
    print("  traced:", text(traced))
    same = (ours == traced) | (ours.isnan() & traced.isnan())  # -inf beside -inf, nan beside nan: 0
    diff = torch.where(same, 0.0, (ours - traced).abs())
    print(f"  max |torch - traced| = {diff.max().item():.2e}")
    assert torch.allclose(ours, traced, rtol=1e-5, atol=1e-6, equal_nan=True), name'''
"""The helpers of the setup cell: ``show`` prints a check the way :func:`printed` writes it in a report."""

NAMED = re.compile(r'(?:\bshow\(|\bTRACED\[)"([^"]+)"')
"""Where code names a traced step: a check (``show("omega[2]", …)``) or a value (``TRACED["dropout.keep"]``)."""
CHECKED = re.compile(r'^\s*show\("([^"]+)"', re.M)
"""The checks a cell prints, in order."""


def printed(trace: Trace, name: str) -> tuple[str, ...]:
    """What ``show(name, …)`` prints of the traced value, as lines (without its machine-dependent last line).

    torch's line is the traced one: ``show`` asserts they agree, and the tests
    that run the notebooks check that the printed lines are these.
    """
    a = np.asarray(trace[name].value, dtype=np.float64)
    rows = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
    text = ("\n" + " " * 10).join("  ".join(f"{float(v): .{fmt.DECIMALS}f}" for v in row) for row in rows)
    return tuple(f"{name}\n  torch : {text}\n  traced: {text}".split("\n"))


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


def traced(trace: Trace, step_id: str, indent: str = "") -> str:
    """The value of step ``step_id`` as a literal (continuation lines indented by ``indent``)."""
    return literal(trace[step_id].value, trace.dtype, indent)


def check(trace: Trace, name: str, expr: str, indent: str = "") -> str:
    """The line that prints ``expr`` (torch) beside step ``name`` (traced) and checks them, at ``indent``.

    The traced value itself is in ``TRACED`` (:func:`traced_cell`), so the line
    is as short in the notebook as in the report that shows it.
    """
    trace[name]  # an unknown step fails here, where the notebook is built, not where it runs
    return f'{indent}show("{name}", {expr})'


def traced_cell(trace: Trace, code: str) -> Cell:
    """``TRACED``: the value of every step that ``code`` checks or uses, as attn-trace recorded it."""
    names = list(dict.fromkeys(NAMED.findall(code)))
    items = "\n".join(f'    "{n}": {traced(trace, n, "    ")},' for n in names)
    head = "# The values attn-trace recorded: each show(...) below prints torch's result beside one of them."
    return f"{head}\nTRACED = {{\n{items}\n}}\n"


def setup(trace: Trace) -> Cell:
    """The first code cell: torch, the dtype and decimals, and the ``show`` helper."""
    return f"import torch\n\ndtype = torch.{trace.dtype}\nDECIMALS = {fmt.DECIMALS}\n\n\n{SHOW}\n"


def lines(*parts: str) -> Cell:
    """A cell from its lines (each may hold several), ending in one newline."""
    return "\n".join(parts) + "\n"


def definitions(*sources: str) -> str:
    """Class or function definitions, two blank lines between and after them (PEP 8), to start a cell."""
    return "\n\n\n".join(sources) + "\n\n"


def inputs_cell(trace: Trace, rows: Any) -> Cell:
    """``inputs`` (one row per token, labelled in a comment), ``tokens`` and the sizes the book names."""
    body = "\n".join(f"        {literal(row, trace.dtype)},  # {trace.tokens[i]!r}" for i, row in enumerate(rows))
    return lines(
        f"inputs = torch.tensor(\n    [\n{body}\n    ],\n    dtype=dtype,\n)",
        f"tokens = {trace.tokens!r}",
        "context_length, d_in = inputs.shape",
    )


PROJECT = {
    "rand": "{x} @ {w}",
    "file": "{x} @ {w}",
    "linear": "{w}({x})",
}
"""How each kind of weights projects: a matrix multiplies, an ``nn.Linear`` layer is called."""


def project(kind: str, x: str, w: str) -> str:
    """The book's expression for ``x`` projected by weights ``w`` (``x @ W`` or ``W(x)``)."""
    return PROJECT[kind].format(x=x, w=w)


def projections_cell(trace: Trace, kind: str) -> Cell:
    """All tokens' queries, keys and values as the book projects them (:func:`project`), checked against q, k, v."""
    made = [f"{v} = {project(kind, 'inputs', w)}" for v, w in zip(ROLES, ("W_query", "W_key", "W_value"), strict=True)]
    return lines(*made, *(check(trace, step, v) for step, v in zip("qkv", ROLES, strict=True)))


ROLES = ("queries", "keys", "values")
"""The variables the pages' code holds the projected tokens in."""


def weights_cell(trace: Trace, kind: str, seed: int, d_out: int, pre: str = "") -> Cell:
    """Build ``W_query``, ``W_key``, ``W_value`` as the book does, and check them against steps ``{pre}W_*``.

    ``rand``: ``torch.rand(d_in, d_out)`` after the seed; ``linear``: bias-free
    ``nn.Linear(d_in, d_out)`` layers after the seed (their ``weight.T`` is the
    traced matrix); ``file``: the traced matrices themselves, as literals.
    Values are drawn in float32, as the book draws them, then converted.
    """
    names = ("W_query", "W_key", "W_value")
    out = [f"d_out = {d_out}"]
    if kind == "rand":
        out += [f"torch.manual_seed({seed})"]
        out += [f"{n} = torch.rand(d_in, d_out).to(dtype)" for n in names]
        out += [check(trace, f"{pre}{n}", n) for n in names]
    elif kind == "linear":
        out += [f"torch.manual_seed({seed})"]
        out += [f"{n} = torch.nn.Linear(d_in, d_out, bias=False).to(dtype)" for n in names]
        out += ["# a layer computes x @ weight.T: its weight.T is the matrix that was traced"]
        out += [check(trace, f"{pre}{n}", f"{n}.weight.T") for n in names]
    else:
        out += ["# weights read from a file when the trace was made: here they are the traced values"]
        out += [f'{n} = torch.tensor(TRACED["{pre}{n}"], dtype=dtype)' for n in names]
    return lines(*out)


CAUSAL_ATTENTION = '''class CausalAttention(torch.nn.Module):
    """The book's compact causal self-attention module."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values'''
"""The book's ``CausalAttention`` class, shared by the ``causal`` and ``multihead`` notebooks."""
