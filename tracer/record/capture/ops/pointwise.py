"""Elementwise ops: arithmetic, ``exp``/``sqrt``/``rsqrt``/``pow``/``neg``, comparisons, masks (``|``, ``&``, ``^``).

Each result entry is one IEEE operation of torch's, so the node holds
torch's values and refers, entry by entry, to the operand entries it was
computed from (broadcast axes of size one read as entry 1).  Masks and
comparisons are stored as 0/1 in the trace's dtype.
"""

from __future__ import annotations

import torch

from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Call, Unsupported, as_stored, operand, out_axes, text_of
from tracer.record.capture.session import Session

BINARY = {
    "add": ("add", "+"),
    "__add__": ("add", "+"),
    "__radd__": ("add", "+"),
    "add_": ("add", "+"),
    "__iadd__": ("add", "+"),
    "sub": ("sub", "−"),
    "__sub__": ("sub", "−"),
    "__rsub__": ("sub", "−"),
    "rsub": ("sub", "−"),
    "sub_": ("sub", "−"),
    "__isub__": ("sub", "−"),
    "mul": ("mul", "×"),
    "__mul__": ("mul", "×"),
    "__rmul__": ("mul", "×"),
    "mul_": ("mul", "×"),
    "__imul__": ("mul", "×"),
    "div": ("div", "/"),
    "true_divide": ("div", "/"),
    "__truediv__": ("div", "/"),
    "__rtruediv__": ("div", "/"),
    "__rdiv__": ("div", "/"),
    "div_": ("div", "/"),
    "__itruediv__": ("div", "/"),
    "pow": ("pow", "^"),
    "__pow__": ("pow", "^"),
    "__rpow__": ("pow", "^"),
    "maximum": ("maximum", "max"),
    **dict.fromkeys(("__or__", "__ror__", "__ior__", "logical_or", "bitwise_or", "bitwise_or_"), ("or", "or")),
    **dict.fromkeys(("__and__", "__rand__", "__iand__", "logical_and", "bitwise_and", "bitwise_and_"), ("and", "and")),
    **dict.fromkeys(("__xor__", "__rxor__", "logical_xor", "bitwise_xor"), ("xor", "xor")),
    "minimum": ("minimum", "min"),
}
COMPARE = {
    "eq": "==",
    "__eq__": "==",
    "ne": "!=",
    "__ne__": "!=",
    "lt": "<",
    "__lt__": "<",
    "le": "<=",
    "__le__": "<=",
    "gt": ">",
    "__gt__": ">",
    "ge": ">=",
    "__ge__": ">=",
}
UNARY = {
    "exp": "exp",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "neg": "neg",
    "__neg__": "neg",
    "abs": "abs",
    "tanh": "tanh",
    "erf": "erf",
    "log": "log",
    "logical_not": "not",
    "__invert__": "not",
    "reciprocal": "reciprocal",
    "square": "square",
    "sigmoid": "sigmoid",
    "relu": "relu",
    "exp_": "exp",
    "cos": "cos",
    "sin": "sin",
}
CASTS = {"bool", "float", "double", "half", "int", "long", "to", "type_as", "type"}


def _receiver(c: Call) -> torch.Tensor | None:
    """The tensor an in-place op (``add_``, ``+=``) overwrites, else None."""
    first = c.args[0] if c.args else None
    inplace = (c.key.endswith("_") and not c.key.startswith("__")) or c.key.startswith("__i")
    return first if inplace and isinstance(first, torch.Tensor) else None


def _record(
    s: Session, c: Call, name: str, op: str, refs: list[Ref], names: tuple[str, ...], text: str, **attrs: object
) -> None:
    out: torch.Tensor = c.out
    v = s.rec.apply(
        op,
        name,
        as_stored(out, s.rec.dtype),
        refs,
        names,
        symbol=rf"\mathrm{{{name}}}",
        text=text,
        attrs={"func": c.key, **attrs},
    )
    s.bind(out, v)


def binary(s: Session, c: Call) -> None:
    """``a + b``, ``a - b``, ``a * b``, ``a / b``, ``a ** b`` … (either side may be a Python number)."""
    op, sign = BINARY[c.key]
    a, b = c.args[0], c.arg(1, "other", c.kwargs.get("exponent"))
    if c.key.startswith("__r") or c.key == "rsub":
        a, b = b, a
    alpha = c.kwargs.get("alpha")
    if alpha not in (None, 1):
        raise Unsupported("alpha")
    out: torch.Tensor = c.out
    tensors = [t for t in (a, b) if isinstance(t, torch.Tensor)]
    names = out_axes(s, out, tensors)
    recv = _receiver(c)
    only = s.known(tensors[0]) if len(tensors) == 1 else None
    source = only.name if only is not None else None
    name, info = s.begin(op, source)
    if recv is not None:
        info.receiver = s.var(recv).name
    shape = tuple(out.shape)
    refs = [operand(s, x, name, names, shape, out.dtype) for x in (a, b)]
    text = f"{text_of(refs[0])} {sign} {text_of(refs[1])}"
    if sign in ("max", "min"):
        text = f"{sign}({text_of(refs[0])}, {text_of(refs[1])})"
    _record(s, c, name, op, refs, names, text)


def unary(s: Session, c: Call) -> None:
    """``exp``, ``sqrt``, ``rsqrt``, ``neg`` … of one tensor."""
    op = UNARY[c.key]
    x = c.args[0]
    out: torch.Tensor = c.out
    vx = s.var(x)
    name, info = s.begin(op, vx.name)
    recv = _receiver(c)
    if recv is not None:
        info.receiver = vx.name
    names = vx.axes
    ref = s.read(x, names, tuple(out.shape)).ref
    _record(s, c, name, op, [ref], names, f"{op}({text_of(ref)})")


def compare(s: Session, c: Call) -> None:
    """``a > b`` and friends: a mask of 0/1 entries."""
    sign = COMPARE[c.key]
    a, b = c.args[0], c.arg(1, "other")
    out: torch.Tensor = c.out
    tensors = [t for t in (a, b) if isinstance(t, torch.Tensor)]
    names = out_axes(s, out, tensors)
    name, _ = s.begin("compare")
    refs = [
        operand(s, x, name, names, tuple(out.shape), a.dtype if isinstance(a, torch.Tensor) else out.dtype)
        for x in (a, b)
    ]
    _record(s, c, name, "compare", refs, names, f"1 if {text_of(refs[0])} {sign} {text_of(refs[1])} else 0", sign=sign)


def cast(s: Session, c: Call) -> None:
    """``.bool()``, ``.float()``, ``.to(dtype)``, ``.type(dtype)``: the same entries in another type.

    An alias when nothing changes; ``x.type()`` with no type names the type (a string): nothing to record.
    """
    x = c.args[0]
    out = c.out
    if isinstance(out, str):
        return
    if not isinstance(out, torch.Tensor) or not isinstance(x, torch.Tensor):
        raise Unsupported("cast")
    vx = s.var(x)
    if out.dtype == x.dtype:
        s.bind(out, vx)
        return
    name, info = s.begin(str(out.dtype).replace("torch.", ""), vx.name)
    info.derived = True
    ref = Ref(vx.name, vx.axes)
    _record(
        s, c, name, "cast", [ref], vx.axes, f"{ax.ref_text(vx.name, vx.axes)} as {str(out.dtype).replace('torch.', '')}"
    )


def masked_fill(s: Session, c: Call) -> None:
    """``x.masked_fill(mask, value)`` (or in place): entries where the mask is set become ``value``."""
    x, mask, value = c.args[0], c.arg(1, "mask"), c.arg(2, "value")
    out: torch.Tensor = c.out
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise Unsupported("masked_fill with a tensor value")
        value = float(value)
    vx = s.var(x)
    names = vx.axes
    name, info = s.begin("masked_fill", vx.name)
    if c.key.endswith("_"):
        info.receiver = vx.name
    shape = tuple(out.shape)
    refs = [s.read(x, names, shape).ref, s.read(mask, names, shape).ref]
    text = f"{text_of(refs[1])} ? {float(value):g} : {text_of(refs[0])}"
    _record(s, c, name, "masked_fill", refs, names, text, fill=str(float(value)))


def where(s: Session, c: Call) -> None:
    """``torch.where(cond, a, b)``: entries of ``a`` where ``cond`` holds, else of ``b``."""
    cond, a, b = c.arg(0, "condition"), c.arg(1, "input"), c.arg(2, "other")
    if a is None or b is None:
        raise Unsupported("where with one argument")
    out: torch.Tensor = c.out
    tensors = [t for t in (a, b, cond) if isinstance(t, torch.Tensor)]
    names = out_axes(s, out, tensors)
    name, _ = s.begin("where")
    refs = [operand(s, x, name, names, tuple(out.shape), out.dtype) for x in (cond, a, b)]
    _record(s, c, name, "where", refs, names, f"{text_of(refs[0])} ? {text_of(refs[1])} : {text_of(refs[2])}")


def triangle(s: Session, c: Call) -> None:
    """``tril``/``triu`` (diagonal ``d``): entries on the kept side copied, the rest 0."""
    x = c.args[0]
    d = int(c.arg(1, "diagonal", 0))
    vx = s.var(x)
    name, _ = s.begin(c.key, vx.name)
    i, j = vx.axes[-2], vx.axes[-1]
    keep = f"<{j}> ≤ <{i}> + {d}" if c.key == "tril" else f"<{j}> ≥ <{i}> + {d}"
    ref = Ref(vx.name, vx.axes)
    _record(s, c, name, c.key, [ref], vx.axes, f"{ax.ref_text(vx.name, vx.axes)} if {keep} else 0", diagonal=d)


def clamp(s: Session, c: Call) -> None:
    """``x.clamp(lo, hi)``/``clamp_min``/``clamp_max`` with Python-number bounds: each entry a choice, no rounding.

    T5 clips relative distances to its buckets this way; the bounds are kept
    as the node's ``min``/``max`` (absent: no bound on that side).
    """
    x = c.args[0]
    lo = c.arg(1, "min") if c.key != "clamp_max" else None
    hi = c.arg(2, "max") if c.key == "clamp" else c.arg(1, "max") if c.key == "clamp_max" else None
    if any(b is not None and (isinstance(b, bool) or not isinstance(b, int | float)) for b in (lo, hi)):
        raise Unsupported("clamp with tensor bounds")
    if lo is None and hi is None:
        raise Unsupported("clamp without bounds")
    vx = s.var(x)
    name, info = s.begin("clamp", vx.name)
    if _receiver(c) is not None:
        info.receiver = vx.name
    out: torch.Tensor = c.out
    ref = s.read(x, vx.axes, tuple(out.shape)).ref
    bounds = {k: float(b) for k, b in (("min", lo), ("max", hi)) if b is not None}
    text = f"clamp({text_of(ref)}, {lo if lo is not None else '−∞'}, {hi if hi is not None else '∞'})"
    _record(s, c, name, "clamp", [ref], vx.axes, text, **bounds)


def outer(s: Session, c: Call) -> None:
    """``torch.outer(a, b)``/``ger``: entry (i, j) is ``a[i] × b[j]``, one rounding each."""
    a, b = c.args[0], c.arg(1, "vec2")
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 1):
        raise Unsupported("outer of these operands")
    names = ("i", "j")
    name, _ = s.begin("mul")
    refs = [Ref(s.var(a).name, ("i",)), Ref(s.var(b).name, ("j",))]
    _record(s, c, name, "mul", refs, names, f"{text_of(refs[0])} × {text_of(refs[1])}")
