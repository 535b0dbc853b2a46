"""A tensor written the way ``print(tensor)`` writes it in PyTorch, from a NumPy array, without importing torch.

The code blocks of a report show under each ``print(...)`` what PyTorch
prints there; the report is built from the trace alone (``--from`` imports no
torch), so the text is made here.  It follows ``torch/_tensor_str.py`` with
the default print options: 4 decimals, scientific notation when the nonzero
finite magnitudes span more than 1000× or leave [1e-4, 1e8], "integer mode"
(``1.``) when every value is whole, 80 columns, and ``...`` past 1000
elements with 3 items kept at each edge.  ``tests/test_page_code.py`` runs
every page's code in PyTorch and compares what it prints with this.
"""

from __future__ import annotations

import math

import numpy as np

PRECISION = 4
LINEWIDTH = 80
THRESHOLD = 1000
EDGEITEMS = 3


class _Formatter:
    """How wide every number of one tensor is printed, and in which mode (torch's ``_Formatter``)."""

    def __init__(self, values: np.ndarray) -> None:
        flat = values.reshape(-1)
        finite = flat[np.isfinite(flat) & (flat != 0)]
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if finite.size == 0:
            return
        absolute = np.abs(finite.astype(np.float64))
        lo, hi = float(absolute.min()), float(absolute.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        for v in (float(x) for x in finite):
            if self.sci_mode:
                text = f"{v:.{PRECISION}e}"
            elif self.int_mode:
                text = f"{v:.0f}" + " "  # the "." an integer-mode number gets
            else:
                text = f"{v:.{PRECISION}f}"
            self.max_width = max(self.max_width, len(text))

    def format(self, value: float) -> str:
        if self.sci_mode:
            text = f"{value:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{PRECISION}f}"
        return (self.max_width - len(text)) * " " + text


class _BoolFormatter(_Formatter):
    """A boolean tensor's entries: ``True`` and ``False``, right-aligned to the widest (torch's non-float branch)."""

    def __init__(self, values: np.ndarray) -> None:
        self.max_width = 5 if bool(np.any(values == 0)) else 4

    def format(self, value: float) -> str:
        text = "True" if value else "False"
        return (self.max_width - len(text)) * " " + text


class _IntFormatter(_Formatter):
    """An integer tensor's entries (``torch.arange``): whole numbers, no point, right-aligned to the widest."""

    def __init__(self, values: np.ndarray) -> None:
        self.max_width = max((len(str(int(v))) for v in values.reshape(-1)), default=1)

    def format(self, value: float) -> str:
        text = str(int(value))
        return (self.max_width - len(text)) * " " + text


def _summarized(a: np.ndarray) -> np.ndarray:
    """The values a summarized print shows (torch's ``get_summarized_data``), to size the numbers by."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:EDGEITEMS], a[-EDGEITEMS:])) if a.shape[0] > 2 * EDGEITEMS else a
    rows = list(range(EDGEITEMS)) + list(range(a.shape[0] - EDGEITEMS, a.shape[0]))
    keep = rows if a.shape[0] > 2 * EDGEITEMS else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in keep])


def _vector(a: np.ndarray, indent: int, summarize: bool, f: _Formatter) -> str:
    per_line = max(1, math.floor((LINEWIDTH - indent) / (f.max_width + 2)))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = [f.format(float(v)) for v in a[:EDGEITEMS]] + [" ..."]
        data += [f.format(float(v)) for v in a[-EDGEITEMS:]]
    else:
        data = [f.format(float(v)) for v in a]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, f: _Formatter) -> str:
    if a.ndim == 0:
        return f.format(float(a))
    if a.ndim == 1:
        return _vector(a, indent, summarize, f)
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        slices = [_nested(a[i], indent + 1, summarize, f) for i in range(EDGEITEMS)] + ["..."]
        slices += [_nested(a[i], indent + 1, summarize, f) for i in range(a.shape[0] - EDGEITEMS, a.shape[0])]
    else:
        slices = [_nested(a[i], indent + 1, summarize, f) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def tensor(value: object, dtype: str = "float32", parameter: bool = False, requires_grad: bool = False) -> str:
    """What ``print(t)`` shows for a floating-point or boolean tensor ``t`` holding ``value``.

    ``dtype`` is the tensor's (float32 is PyTorch's default and is not
    named; float64 adds ``dtype=torch.float64``; ``bool`` and ``int64``,
    also defaults PyTorch does not name, print ``True``/``False`` and whole
    numbers).  A ``parameter`` prints as
    ``Parameter containing:`` and ``requires_grad=True``; a view of one
    (``layer.weight.T``) is ``requires_grad`` too, even with gradients off.
    Only CPU tensors without a gradient history are covered: the pages'
    code turns gradients off.
    """
    a = np.asarray(value, dtype=np.float64)
    summarize = a.size > THRESHOLD
    prefix = "tensor("
    shown = _summarized(a) if summarize else a
    f = {"bool": _BoolFormatter, "int64": _IntFormatter}.get(dtype, _Formatter)(shown)
    body = "[]" if a.size == 0 else _nested(a, len(prefix), summarize, f)
    suffixes = []
    if a.size == 0:
        suffixes.append(f"size={tuple(a.shape)}")
    if dtype not in ("float32", "bool", "int64"):
        suffixes.append(f"dtype=torch.{dtype}")
    if parameter or requires_grad:
        suffixes.append("requires_grad=True")
    out = prefix + body
    last = len(out) - out.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > LINEWIDTH:
            out += ",\n" + " " * len(prefix) + suffix
            last = len(prefix) + len(suffix)
        else:
            out += ", " + suffix
            last += len(suffix) + 2
    out += ")"
    return "Parameter containing:\n" + out if parameter else out
