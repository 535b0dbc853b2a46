"""A captured step's id said in words: the code's variable as code, what was done to it in the page's language.

Captured ids are built from the code (``q``, ``attn.in_proj``) and the ops
that followed (``q.view.transpose``, ``att_masked_fill`` for ``att`` when a
``masked_fill`` reassigned it, ``x_2`` for the second value stored in
``x``).  They are exact and stable, which is what ``explain`` and
``steps`` need, but prose that prints them reads as noise.  A caption says
``q`` (viewed, then transposed), "matrix product, for ``att``", ``att``
(after ``masked_fill``) instead: the code's name in backticks, the ops as
words (``capture.w_*`` in the locale files).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tracer.core.trace import Trace
from tracer.present.strings import Strings

OPS = (
    "view", "reshape", "transpose", "permute", "getitem", "unsqueeze", "squeeze", "expand", "unflatten", "flatten",
    "split", "chunk", "unbind", "cat", "stack", "matmul", "einsum", "linear", "mul", "div", "add", "sub", "compare",
    "loop", "xw", "masked_fill", "softmax", "where", "lookup", "put", "sum", "mean", "repeat_interleave", "repeat",
)  # fmt: skip
"""Ops with words of their own (``capture.w_<op>``)."""
MOVES = {"view", "reshape", "transpose", "permute", "getitem", "unsqueeze", "squeeze", "expand", "unflatten"}
MOVES |= {"flatten", "split", "chunk", "unbind", "cat", "stack", "loop", "xw", "lookup", "put"}
MOVES |= {"repeat_interleave", "repeat"}
"""Ops a suffix applies to the tensor before it (``q.view.transpose``: ``q`` viewed, then transposed); any other
op in a suffix is computed in the statement that assigns the stem (``att.matmul``: the product in ``att = …``)."""

_NUMBERED = re.compile(r"^(?P<stem>.+?)_(?P<n>[0-9]+)$")
_REASSIGNED = re.compile(r"^(?P<stem>[A-Za-z_][A-Za-z0-9_]*?)_(?P<op>" + "|".join(sorted(OPS, key=len)[::-1]) + ")$")


def _op(segment: str) -> tuple[str, int] | None:
    """``transpose`` -> (``transpose``, 1); ``getitem_2`` -> (``getitem``, 2); not an op -> None."""
    m = _NUMBERED.match(segment)
    base, n = (m.group("stem"), int(m.group("n"))) if m else (segment, 1)
    return (base, n) if base in OPS else None


def words(
    name: str,
    s: Strings,
    code: bool = True,
    modules: Mapping[str, str] | None = None,
    steps: Mapping[str, int] | None = None,
) -> str:
    """``q.view.transpose`` -> ```q`` (viewed, then transposed)`` (``code=False``: no backticks, for alt texts).

    ``modules`` maps the module paths of the trace as ids write them to the
    paths (``linears_3`` -> ``linears.3``): their number is part of the path,
    not a second value, and the page shows the path.  ``steps`` maps the ids
    a generation loop made to the step (the module's call) that made them:
    ``k_new_2`` is "``k_new`` at step 2", not its "value 2".
    """
    modules = modules or {}
    parts = name.split(".")
    ops: list[str] = []
    while len(parts) > 1 and _op(parts[-1]) is not None:
        ops.insert(0, parts.pop())
    stem = ".".join(parts)
    step = (steps or {}).get(stem, (steps or {}).get(name))
    how: list[str] = []
    m = _NUMBERED.match(stem)
    if step is not None:  # ``k_new_2``: the variable the code names, at the step that made it
        head, _, last = stem.rpartition(".")
        got = _NUMBERED.match(last)
        stem = f"{head}.{got.group('stem')}".lstrip(".") if got and int(got.group("n")) >= 2 else stem
    elif m and "." not in m.group("stem") and int(m.group("n")) >= 2 and stem not in modules:  # ``x_2``: 2nd value
        stem = m.group("stem")
        how.append(s("capture.w_value", n=int(m.group("n"))))
    r = _REASSIGNED.match(stem)
    if r:  # ``att_masked_fill``: ``att`` as a masked_fill reassigned it
        stem = r.group("stem")
        how.append(s("capture.w_after", op=f"`{r.group('op')}`" if code else r.group("op")))
    bases = [_base(op) for op in ops]
    inner = bases.pop() if bases and bases[-1] not in MOVES else ""  # ``att.matmul``: computed in ``att = …``
    how += [s(f"capture.w_{b}") for b in bases]
    stem = modules.get(stem, stem)
    shown = f"`{stem}`" if code else stem
    shown = shown if step is None else s("capture.w_step", name=shown, n=step)
    said = s("capture.w_how", name=shown, how=s("capture.w_then").join(how)) if how else shown
    return s("capture.w_in", what=s(f"capture.w_{inner}"), name=said) if inner else said


def _base(segment: str) -> str:
    """The op a suffix segment names: ``getitem_2`` -> ``getitem``."""
    got = _op(segment)
    return got[0] if got is not None else segment


def upper(text: str) -> str:
    """A sentence that opens with a lowercase word ("the matrix product computed for …") capitalised."""
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def steps_of(trace: Trace) -> dict[str, int]:
    """The ids a generation loop made, to their step (``meta["steps"]``, checked: a trace file is untrusted)."""
    table = trace.meta.get("steps")
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, str) and type(v) is int and v >= 1}


def paths_of(trace: Trace) -> dict[str, str]:
    """The trace's module paths as ids write them, to the paths (``linears_3`` -> ``linears.3``)."""
    modules = trace.meta.get("modules") or {}
    return {str(p).replace(".", "_"): str(p) for p in modules} if isinstance(modules, dict) else {}
