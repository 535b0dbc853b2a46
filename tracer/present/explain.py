"""Explain one step the way a teacher writes it on the board.

    omega[2,1] = x(2)·x(1) = 0.55×0.43 + 0.87×0.15 + 0.66×0.89 = 0.2365 + 0.1305 + 0.5874 = 0.9544

The first line is the equation; the lines after it name the op, the stage
and the ids of the inputs, so a student can ask about those next and keep
explaining backwards, down to the inputs.  ``attn-trace explain`` fits the
lines to 80 columns (``cols``), broken before ``=``, ``+`` and ``−`` as on a
board (:mod:`tracer.present.termtext`), and speaks the page's languages
(``lang``: the words around the numbers come from ``[explain]`` of the
locale tables).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence

import numpy as np

from tracer.core import ids, portable, verify
from tracer.core.fmt import DECIMALS, adds_up, num, places, printable, rounding_note
from tracer.core.trace import Node, Step, Trace
from tracer.present.board import elide
from tracer.present.board import terms as shown_terms
from tracer.present.strings import Strings
from tracer.present.termtext import fit

MAX_IDS = 12


def value_text(trace: Trace, step_id: str, decimals: int = DECIMALS) -> str:
    """A step's value as shown in an explanation: inputs as given (0.55), the rest fixed (0.9544).

    Remembered per trace (its values are read-only): a page's panels write
    the same inputs into many equations (a row's maximum into each of its
    512 shifted scores, the five terms a softmax shows into each of its
    512 weights).
    """
    said = _SAID.setdefault(trace, {})
    key = (step_id, decimals)
    text = said.get(key)
    if text is None:
        s = trace[step_id]
        if s.op == "maxabsdiff":
            text = portable.check_text(s.node, decimals)
        elif s.op == "input":
            text = num(float(s.value), _given_places(s.node, decimals))
        else:
            text = num(float(s.value), decimals)
        said[key] = text
    return text


_SAID: weakref.WeakKeyDictionary[Trace, dict[tuple[str, int], str]] = weakref.WeakKeyDictionary()
"""Per trace, the value texts :func:`value_text` has written, by step id and decimals."""


_PLACES: weakref.WeakKeyDictionary[Node, dict[int, int]] = weakref.WeakKeyDictionary()
"""Per input node and decimals, the places its values were given with: worked out once, not per entry shown."""


def _given_places(node: Node, decimals: int) -> int:
    """:func:`~tracer.core.fmt.places` of an input node, remembered: a page's doors explain thousands of entries."""
    known = _PLACES.setdefault(node, {})
    if decimals not in known:
        known[decimals] = places(node.value, decimals)
    return known[decimals]


def signed_sum(items: list[str]) -> str:
    """Join terms with + and −, so a negative term reads ``a − 0.3690`` rather than ``a + -0.3690``."""
    out = ""
    for n, item in enumerate(items):
        if n == 0:
            out = item
        elif item.startswith("-"):
            out += f" − {item[1:]}"
        else:
            out += f" + {item}"
    return out


def factor(text: str) -> str:
    """A factor in a product: negative numbers in parentheses (``0.48×(-0.45)``)."""
    return f"({text})" if text.startswith("-") else text


def _elide(items: list[str]) -> list[str]:
    return shown_terms(items, "…")


def _shown(ids: Sequence[str]) -> list[str | None]:
    """The inputs a board equation writes out (:func:`tracer.present.board.elide`); None stands for the gap.

    Only these are turned into text: a weighted sum over 512 tokens writes
    five of its terms, so five values are looked up, not 512.
    """
    return [ids[k] if k is not None else None for k in elide(len(ids))]


def equation(trace: Trace, step: Step, decimals: int = DECIMALS, s: Strings | None = None) -> str:
    """The one-line board equation for an element step; its few words (a masked entry's) in ``s``'s language.

    Without ``s`` the words are English (the pages' door panels).
    """
    node = step.node
    ins = step.reads()  # only the ids the equation writes out are rendered
    v = num(float(step.value), decimals) if node.op != "maxabsdiff" else portable.check_text(node, decimals)
    text = step.text  # indices filled in: worked out once
    head = f"{step.id} = {text}" if text else step.id
    if node.granularity != "element":
        return f"{head} {v}" if v.startswith("≤") else f"{head} = {v}"
    op = node.op
    if op == "input":
        return f"{step.id} = {value_text(trace, step.id, decimals)}"
    vals = [value_text(trace, i, decimals) if i is not None else "…" for i in _shown(ins)]  # elided already
    if len(ins) == 1 and (op == "write" or trace[ins[0]].node.name.endswith(".put")):
        src = trace[ins[0]]  # an entry written through indexing, or a stacked number: the step it came from
        while src.op == "write" and len(src.inputs) == 1 and trace[src.inputs[0]].op == "write":
            src = trace[src.inputs[0]]  # carried over unchanged from the buffer's earlier state: skip to its last write
        while src.node.name.endswith(".put") and len(src.inputs) == 1:
            src = trace[src.inputs[0]]
        return f"{step.id} = {equation(trace, src, decimals, s)}"
    if op in ("mul", "div", "sub", "add") and len(vals) == 2:
        sign = {"mul": "×", "div": "/", "sub": "−", "add": "+"}[op]
        return f"{head} = {vals[0]} {sign} {factor(vals[1])} = {v}"
    if op == "rescale_add" and len(vals) == 3:  # lesson flash: the running sum rescaled, the block's part added
        return f"{head} = {vals[0]} × {factor(vals[1])} + {factor(vals[2])} = {v}"
    if op == "maximum" and len(vals) == 2:
        return f"{head} = max({vals[0]}, {vals[1]}) = {v}"
    if op == "masked_fill" and len(vals) == 2:
        why = "masked" if float(trace[ins[1]].value) != 0 else "kept"  # the mask says, even where fill = value
        said = (s or Strings("en"))(f"explain.entry_{why}", mask=vals[1], score=vals[0])
        return f"{head} = {v} {said}"
    if op == "acc":
        if len(vals) == 1:
            return f"{head} = {v}"
        return f"{head} = {vals[0]} + {vals[1]} = {v}"
    if op == "exp":
        return f"{head} = exp({vals[0]}) = {v}"
    if op == "max":
        return f"{head} = max({', '.join(_elide(vals))}) = {v}"
    if op == "softmax":
        return f"{head} = softmax({', '.join(_elide(vals))})[{_along(node, step.index) + 1}] = {v}"
    if op == "sum":
        parts = [f"{head}"]
        terms = [trace[i] if i is not None else None for i in _shown(ins)]
        if terms and all(t is None or t.op == "mul" for t in terms):
            factors = ["×".join(factor(value_text(trace, f, decimals)) for f in t.inputs) if t else "…" for t in terms]
            parts.append(" + ".join(factors))
        parts.append(signed_sum(_elide(vals)))
        parts.append(v)
        return " = ".join(parts)
    return f"{head} = {v}"


def _along(node: Node, index: tuple[int, ...]) -> int:
    """The position of an entry along the axis its softmax normalizes (``over``), which need not be the last.

    ``weights[3,1]`` of a softmax over the rows (``dim=0``) is entry 3 of
    the column it normalizes, ``softmax(scores[*,1])[3]``: the listed values
    run along that axis, so the index into them is the step's index on it.
    """
    over = node.attrs.get("over")
    return index[node.axes.index(over)] if over in node.axes else index[-1]


def explain(trace: Trace, step_id: str, decimals: int = DECIMALS, lang: str = "en", cols: int | None = None) -> str:
    """The full explanation of ``step_id``: equation, op, stage, inputs, and any caveat.

    ``lang`` chooses the language of the words; ``cols`` wraps every line to
    that many terminal columns (None: one line each, for callers that lay
    the text out themselves).  Each line is :func:`~tracer.core.fmt.printable`:
    a control character in a node's ``text`` or ``latex`` shows as ``\\x1b``,
    a newline as ``\\n``.
    """
    s = Strings(lang)

    def said(key: str) -> str:  # "op: ", "运算："
        return s(f"explain.{key}") + s("explain.colon")

    step = trace[step_id]
    lines = []
    if step.is_element:
        lines.append(equation(trace, step, decimals, s))
    else:
        lines.append(f"{step.id} = {step.text}" if step.text else step.id)
        lines.extend(array_text(np.asarray(step.value), decimals).split("\n"))
    lines.append(f"  {said('op')}{step.op}    {said('stage')}{step.stage}")
    if step.latex:  # captured layout and write steps have none
        lines.append(f"  {said('formula')}{step.latex}")
    ins = list(step.inputs)
    if ins:
        more = s("explain.more", n=len(ins) - MAX_IDS) if len(ins) > MAX_IDS else ""
        lines.append(f"  {said('inputs')}{', '.join(ins[:MAX_IDS])}{more}")
    elif step.op == "input":
        lines.append(f"  {_input_note(trace, step, s)}")
    if step.is_element and step.op == "sum":
        terms = [float(trace[i].value) for i in ins]
        total = float(step.value)
        fin = np.finfo(step.node.value.dtype)
        if terms and not adds_up(terms, total, float(fin.eps), float(fin.tiny)):
            got, shown = num(math.fsum(terms), decimals), num(total, decimals)
            lines.append(f"  {said('note')}{s('explain.edited', got=got, total=shown)}")
        elif terms and rounding_note(terms, total, decimals):
            lines.append(f"  {said('note')}{s('explain.rounded', n=decimals)}")
    if step.is_element and not np.isfinite(step.value):
        lines.append(f"  {said('warning')}{_nonfinite_note(trace, step, s)}")
    if portable.bound(step.node) is not None:
        lines.append(f"  {said('note')}{_bound_note(trace, step, s)}")
    loop = portable.loop_forms(trace).get(step.node.name)
    if loop is not None:
        lines.append(f"  {said('note')}{s('explain.loop', loop=loop)}")
    outside = _outside(trace, step) if step.is_element else None
    if outside is not None:
        ref, operand, size = outside
        note = s("explain.outside", ref=ref, operand=operand, size=size, node=step.node.name)
        lines.append(f"  {said('note')}{note}")
    text = "\n".join(map(printable, lines))  # text from the file cannot act on the terminal or fake a line
    return fit(text, cols) if cols else text


SELECTING = frozenset({"cat", "concat", "stack", "write"})
"""Ops whose references pick one operand each entry: the others fall outside theirs by design."""


def _outside(trace: Trace, step: Step) -> tuple[str, str, str] | None:
    """The first reference of ``step`` that reads past its operand, as ``("x[8,1]", "x", "6×3")``, or None.

    A reference that falls outside its operand is skipped (:class:`~tracer.core.trace.Ref`),
    which is how a running quantity starts (``m[i,u-1]`` at ``u = 1``, a
    sum's own previous entry) and how an op that picks one operand per entry
    works (:data:`SELECTING`).  When the node's values do not then follow
    from its operands (:func:`tracer.core.verify.follows`), the file's index
    expression reaches past the operand and the equation shown lacks a
    factor: said here, as ``verify`` says of the node.
    """
    if step.op in SELECTING:
        return None
    bound = step.bound
    for ref in step.node.args:
        if ref.index is None or ref.node == step.node.name:
            continue
        shape = trace.node(ref.node).value.shape
        at = [ids.index_expr(e)(bound) if e != "*" else None for e in ref.index]
        if any(i is not None and not 1 <= i <= n for i, n in zip(at, shape, strict=True)):
            if verify.follows(trace, step.node.name):  # a boundary by design; recomputed only when one is met
                return None
            shown = ",".join("*" if i is None else str(i) for i in at)
            return f"{ref.node}[{shown}]", ref.node, "×".join(map(str, shape))
    return None


def _bound_note(trace: Trace, step: Step, s: Strings) -> str:
    lib = step.node.args[0].node if step.node.args else s("explain.library")
    return s("explain.bound", lib=lib, dtype=trace.dtype)


def _input_note(trace: Trace, step: Step, s: Strings) -> str:
    tokens = trace.tokens
    axes = step.node.axes
    if "j" in axes:  # a (query, key) matrix given as input, a mask or a dropout draw: not a token's component
        return s("explain.input")
    if axes[:1] == ("i",) and step.index and step.index[0] < len(tokens):
        token = f"{tokens[step.index[0]]!r}"
        if len(step.index) > 1:
            return s("explain.input_comp", c=step.index[1] + 1, i=step.index[0] + 1, token=token)
        return s("explain.input_vec", i=step.index[0] + 1, token=token)
    return s("explain.input")


def _nonfinite_note(trace: Trace, step: Step, s: Strings) -> str:
    v = float(step.value)
    if step.op == "masked_fill" or (np.isinf(v) and v < 0 and step.stage == "mask"):
        return s("explain.masked")
    if step.op == "exp" and np.isinf(v):
        return s("explain.overflow", dtype=trace.dtype)
    if np.isnan(v):
        return s("explain.nan")
    return s("explain.huge", v=num(v), dtype=trace.dtype)


def array_text(a: np.ndarray, decimals: int = DECIMALS) -> str:
    """A slice's or tensor's values, a bracketed row per line (a shape note when too large to list)."""
    if a.ndim == 0:
        return "  = " + num(float(a), decimals)
    if a.size > 64:
        return f"  = <{' x '.join(map(str, a.shape))} tensor of {a.dtype}>"
    rows = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
    return "\n".join("  [" + ", ".join(num(x, decimals) for x in row) + "]" for row in rows)
