"""Reductions and softmax: ``sum``, ``mean``, ``max``/``amax`` over one axis, several or all; ``softmax``.

A sum is recorded as its running sums left to right (``N.s``) with torch's
own total as ``N`` and ``check.N`` between them (torch adds in blocks).
``softmax`` is the library call ``N`` and, beside it, its decomposition in the
stable form the lessons teach: ``N.max``, ``N.shift``, ``N.exp``, ``N.sum``
(running sums ``N.sum.s``) and ``N.quot``; ``check.N`` compares the two.
"""

from __future__ import annotations

import math

import torch

from tracer.core import bounds
from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Call, Unsupported, as_stored, check, magnitude, sums_bound, unit
from tracer.record.capture.session import Session
from tracer.record.recorder import Var


def _dim(c: Call, x: torch.Tensor, pos: int = 1) -> int:
    d = c.arg(pos, "dim")
    if isinstance(d, list | tuple):
        if len(d) != 1:
            raise Unsupported("reduction over several axes")
        d = d[0]
    if d is None:
        raise Unsupported("reduction over every axis")
    return int(d) % x.dim()


def _dims(c: Call, x: torch.Tensor) -> list[int]:
    """The axes a ``sum``/``mean``/``amax`` reduces, ascending (all of them when ``dim`` is not given)."""
    d = c.arg(1, "dim")
    if d is None or (isinstance(d, list | tuple) and not d):
        return list(range(x.dim()))
    if isinstance(d, list | tuple):
        return sorted({int(e) % x.dim() for e in d})
    return [int(d) % x.dim()]


def flat(s: Session, name: str, vx: Var, x: torch.Tensor, dims: list[int]) -> tuple[Var, str]:
    """``x`` with the axes ``dims`` read as one axis (in that order, C order), as node ``name``, and its axis.

    One reduced axis is read as it is.  Several are laid out one after
    another in a layout node ``N.flat`` whose entries name the entry of
    ``x`` they are, so the running sums go through them left to right, as
    ``x.flatten()`` would, and each still leads back to its source.
    """
    if len(dims) == 1:
        return vx, vx.axes[dims[0]]
    rest = [a for d, a in enumerate(vx.axes) if d not in dims]
    over = ax.fresh(vx.axes, ("m", "n"))
    sizes = [int(x.shape[d]) for d in dims]
    exprs = list(vx.axes)
    for t, d in enumerate(dims):
        inner = math.prod(sizes[t + 1 :])
        e = f"(({over}-1)//{inner})" if inner != 1 else f"({over}-1)"
        exprs[d] = f"{e}+1" if t == 0 else f"{e}%{sizes[t]}+1"
    keep = [d for d in range(x.dim()) if d not in dims]
    value = vx.data.permute(*keep, *dims).reshape(*[int(x.shape[d]) for d in keep], -1)
    names = (*rest, over)
    flat = s.rec.apply(
        "view",
        name,
        value,
        [Ref(vx.name, tuple(exprs))],
        names,
        text=ax.ref_text(vx.name, exprs),
        attrs={"func": "flatten"},
    )
    return flat, over


def stable(s: Session, name: str, x: Var, over: str) -> Var:
    """The stable softmax of ``x`` along ``over``, step by step; returns the quotients ``name.quot``."""
    names = x.axes
    rest = tuple(a for a in names if a != over)
    row = ax.ref_text(x.name, [("*" if a == over else a) for a in names])
    m = s.rec.max(f"{name}.max", x(*names), over, symbol="m", latex=r"m = \max", text=f"max {row}")
    shift = s.rec.elementwise(
        "sub",
        f"{name}.shift",
        [x(*names), m(*rest)],
        names,
        symbol="x - m",
        latex="x - m",
        text=f"{ax.ref_text(x.name, names)} − {ax.ref_text(m.name, rest)}",
    )
    e = s.rec.elementwise(
        "exp",
        f"{name}.exp",
        [shift(*names)],
        names,
        symbol="e",
        latex="e^{x - m}",
        text=f"exp({ax.ref_text(shift.name, names)})",
    )
    total = s.rec.contract(
        f"{name}.sum",
        e(*names),
        None,
        names,
        over,
        symbol="S",
        latex=rf"S = \sum_{{{over}}} e^{{x - m}}",
        text=f"Σ_{over} {ax.ref_text(e.name, names)}",
        part_text=("", f"Σ_{{m≤<{over}>}} {ax.ref_text(e.name, [('m' if a == over else a) for a in names])}"),
    )
    return s.rec.elementwise(
        "div",
        f"{name}.quot",
        [e(*names), total(*rest)],
        names,
        symbol="e / S",
        latex=r"\frac{e^{x - m}}{S}",
        text=f"{ax.ref_text(e.name, names)} / {ax.ref_text(total.name, rest)}",
    )


def softmax(s: Session, c: Call) -> None:
    """``torch.softmax``/``Tensor.softmax``/``F.softmax`` along one axis.

    ``dtype=`` the input already has (Llama's and BLOOM's ``dtype=torch.float32``
    on float32 scores) changes nothing; another dtype is not followed.
    """
    x, out = c.args[0], c.out
    want = c.kwargs.get("dtype", c.args[2] if len(c.args) > 2 and isinstance(c.args[2], torch.dtype) else None)
    if want is not None and not (isinstance(x, torch.Tensor) and want == x.dtype):
        raise Unsupported("softmax into another dtype")
    vx = s.var(x)
    d = _dim(c, x)
    over = vx.axes[d]
    name, _ = s.begin("softmax", vx.name)
    quot = stable(s, name, vx, over)
    star = tuple("*" if a == over else a for a in vx.axes)
    v = s.rec.apply(
        "softmax",
        name,
        out,
        [Ref(vx.name, star)],
        vx.axes,
        symbol=rf"\mathrm{{{name}}}",
        latex=rf"\mathrm{{softmax}}(\mathrm{{{vx.name}}})",
        text=f"softmax({ax.ref_text(vx.name, star)})[<{over}>]",
        attrs={"over": over, "func": c.key, "parts": f"{name}.quot"},
    )
    s.bind(out, v)
    check(s, name, v, quot.data, quot.name, f"{name}.quot (stable softmax step by step)")


def _keepdim(s: Session, c: Call, v: Var, out: torch.Tensor, x: Var) -> None:
    """A ``keepdim=True`` result: the reduced node read back with its axis of size one."""
    name = f"{v.name}.keepdim"
    kept = s.rec.apply("unsqueeze", name, out, [Ref(v.name, v.axes)], x.axes, text=ax.ref_text(v.name, v.axes))
    s.bind(out, kept)


def total(s: Session, c: Call) -> None:
    """``sum`` and ``mean`` over one axis, several or all: running sums left to right, torch's total (and ``/ n``)."""
    x, out = c.args[0], c.out
    if c.kwargs.get("dtype") is not None or (len(c.args) > 1 and not isinstance(c.args[1], int | list | tuple)):
        raise Unsupported("sum with a dtype")
    vx = s.var(x)
    dims = _dims(c, x)
    if x.dim() == 0:
        s.bind(out, vx)
        return
    keep = bool(c.arg(2, "keepdim", False))
    rest = tuple(a for d, a in enumerate(vx.axes) if d not in dims)
    got = as_stored(out, s.rec.dtype)  # a count of a mask or an integer tensor: exact whole numbers
    value = got.reshape([int(x.shape[d]) for d in range(x.dim()) if d not in dims]) if keep else got
    name, _ = s.begin(c.key, vx.name)
    src, over = flat(s, f"{name}.flat", vx, x, dims)
    n = math.prod(int(x.shape[d]) for d in dims)
    if c.key == "sum":
        v = s.rec.contract(
            name,
            src(*src.axes),
            None,
            src.axes,
            over,
            symbol=rf"\mathrm{{{name}}}",
            latex=rf"\sum_{{{over}}}",
            text=f"Σ_{over} {ax.ref_text(src.name, src.axes)}",
            total=value.detach().clone(),
            attrs={"library": "sum"},
        )
        bound = sums_bound(magnitude(src.data, src.axes.index(over)), n, value.dtype)
        check(s, name, v, s.rec.value(f"{name}.s", last=over), f"{name}.s", f"{name}.s left to right", bound)
    else:
        part = s.rec.contract(
            f"{name}.sum",
            src(*src.axes),
            None,
            src.axes,
            over,
            symbol="S",
            latex=rf"\sum_{{{over}}}",
            text=f"Σ_{over} {ax.ref_text(src.name, src.axes)}",
        )
        count = s.rec.apply("const", f"{name}.n", torch.tensor(float(n), dtype=value.dtype), [], (), text=str(n))
        v = s.rec.apply(
            "div",
            name,
            value,
            [Ref(part.name, rest), Ref(count.name, ())],
            rest,
            text=f"{ax.ref_text(part.name, rest)} / {n}",
            attrs={"library": "mean"},
        )
        loop = s.rec.elementwise(
            "div", f"{name}.loop", [part(*rest), count()], rest, symbol="", latex="", text=f"{part.name} / {n}"
        )
        e = sums_bound(magnitude(src.data, src.axes.index(over)), n, value.dtype)
        bound = bounds.scaled(loop.data.double().numpy(), e, float(n), unit(value.dtype))
        check(s, name, v, loop.data, loop.name, f"{loop.name} (left to right, then / {n})", bound)
    if keep:
        _keepdim(s, c, v, out, vx)
    else:
        s.bind(out, v)


def maximum(s: Session, c: Call) -> None:
    """``max``/``amax`` over one axis, several or all (``max(dim)``'s indices as a tensor step): exact, as torch's."""
    x = c.args[0]
    if c.key == "max" and len(c.args) > 1 and isinstance(c.args[1], torch.Tensor):
        raise Unsupported("max of two tensors")
    out = c.out[0] if isinstance(c.out, tuple) else c.out
    vx = s.var(x)
    dims = _dims(c, x)
    if x.dim() == 0:
        s.bind(out, vx)
        return
    keep = bool(c.arg(2, "keepdim", False))
    name, _ = s.begin(c.key, vx.name)
    src, over = flat(s, f"{name}.flat", vx, x, dims)
    row = ax.ref_text(src.name, ["*" if a == over else a for a in src.axes])
    v = s.rec.max(
        name, src(*src.axes), over, symbol=rf"\mathrm{{{name}}}", latex=rf"\max_{{{over}}}", text=f"max {row}"
    )
    if keep:
        _keepdim(s, c, v, out, vx)
    else:
        s.bind(out, v)
