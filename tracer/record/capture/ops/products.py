"""Products: ``@``/``matmul``/``mm``/``bmm``/``mv``/``dot``, ``F.linear`` and ``einsum``.

Each is recorded with :meth:`~tracer.record.recorder.Recorder.contract`:
``N.p`` every product, ``N.s`` every running sum left to right in the
dtype, and ``N`` torch's own result (what the program went on with), plus
``check.N``, the largest gap between torch's result and the left-to-right
sums (a BLAS kernel adds in another order).
"""

from __future__ import annotations

import torch

from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Call, Unsupported, check
from tracer.record.capture.session import Session
from tracer.record.recorder import Arg


def _lead(s: Session, t: torch.Tensor, keep: int, out_lead: tuple[str, ...], shape: tuple[int, ...]) -> list[str]:
    """Reader names for the leading (batch) axes of a matmul operand, broadcast from the right."""
    n = t.dim() - keep
    names = out_lead[len(out_lead) - n :] if n else ()
    sizes = shape[len(out_lead) - n : len(out_lead)] if n else ()
    return ["1" if t.shape[d] == 1 and sizes[d] != 1 else names[d] for d in range(n)]


def matmul(s: Session, c: Call) -> None:
    """``a @ b`` with torch's broadcasting rules for 1-d and batched operands."""
    a, b = c.args[0], c.args[1]
    if c.key == "__rmatmul__":
        a, b = b, a
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.dim() == 0 or b.dim() == 0:
        raise Unsupported("matmul of a scalar")
    out: torch.Tensor = c.out
    va, vb = s.var(a), s.var(b)
    nlead = out.dim() - (a.dim() >= 2) - (b.dim() >= 2)
    donor = va if a.dim() >= b.dim() else vb
    lead = ax.unique([*donor.axes[: max(0, len(donor.axes) - 2)]][-nlead:] if nlead else [])
    if len(lead) < nlead:
        lead = ax.unique([*ax.default(nlead + 2)[:-2]])
    used = list(lead)
    rows: list[str] = []
    if a.dim() >= 2:
        rows = [ax.fresh(used, (va.axes[-2], "i"))]
        used += rows
    cols: list[str] = []
    if b.dim() >= 2:  # keys read transposed (their rows were tokens, i) give the key axis j, else features c
        cols = [ax.fresh(used, ("j", "c") if vb.axes[-1] == "i" else ("c", "j"))]
        used += cols
    over = ax.fresh(used, (va.axes[-1], "k"))
    names = (*lead, *rows, *cols)
    shape = tuple(out.shape)
    ia = [*_lead(s, a, min(a.dim(), 2), lead, shape), *rows, over]
    ib = [*_lead(s, b, min(b.dim(), 2), lead, shape), over, *cols]
    _contract(s, c, va(*ia), vb(*ib), names, over, "matmul", f"{va.name} @ {vb.name}")


def linear(s: Session, c: Call) -> None:
    """``F.linear(x, W, b) = x Wᵀ + b`` (what ``nn.Linear`` runs)."""
    x, w, bias = c.arg(0, "input"), c.arg(1, "weight"), c.arg(2, "bias")
    if not isinstance(x, torch.Tensor) or not isinstance(w, torch.Tensor) or w.dim() not in (1, 2) or x.dim() == 0:
        raise Unsupported("linear of these shapes")
    out: torch.Tensor = c.out
    vx, vw = s.var(x), s.var(w)
    lead = vx.axes[:-2] if x.dim() >= 2 else ()
    rows = [vx.axes[-2]] if x.dim() >= 2 else []
    col = [ax.fresh([*lead, *rows], ("c", "o", "j"))] if w.dim() == 2 else []
    over = ax.fresh([*lead, *rows, *col], (vx.axes[-1], "k"))
    names = (*lead, *rows, *col)
    ia = [*lead, *rows, over]
    iw = [*col, over]
    if bias is None:
        _contract(s, c, vx(*ia), vw(*iw), names, over, "linear", f"{vx.name} @ {vw.name}ᵀ")
        return
    name, _ = s.begin("linear", None)
    mm = f"{name}.xw"
    s.rec.contract(
        mm,
        vx(*ia),
        vw(*iw),
        (*names, over),
        over,
        symbol=rf"\mathrm{{{mm}}}",
        latex=rf"\sum_{{{over}}} \mathrm{{{vx.name}}}\, \mathrm{{{vw.name}}}",
        text=f"Σ_{over} {ax.ref_text(vx.name, ia)} × {ax.ref_text(vw.name, iw)}",
        part_text=_part_texts(vx.name, ia, vw.name, iw, over),
    )
    ours = s.rec.value(mm)
    vb = s.read(bias, names, tuple(out.shape))
    tv = s.rec.apply(
        "add",
        name,
        out,
        [Ref(mm, names), vb.ref],
        names,
        symbol=rf"\mathrm{{{name}}}",
        latex=rf"\mathrm{{{name}}} = x W^{{\top}} + b",
        text=f"{ax.ref_text(mm, names)} + {ax.ref_text(vb.var.name, vb.index)}",
        attrs={"library": "linear"},
    )
    s.bind(out, tv)
    check(s, name, tv, ours + vb.aligned(names), mm, f"({mm} + bias) left to right")


def _part_texts(an: str, ia: list[str], bn: str, ib: list[str], over: str) -> tuple[str, str]:
    prev = [f"{over}-1" if i == over else i for i in ia]
    return (
        f"{ax.ref_text(an, ia)} × {ax.ref_text(bn, ib)}",
        f"Σ_{{m≤<{over}>}} {ax.ref_text(an, [('m' if i == over else i) for i in ia])} × "
        f"{ax.ref_text(bn, [('m' if i == over else i) for i in ib])}"
        if prev
        else "",
    )


def _contract(s: Session, c: Call, a: Arg, b: Arg, names: tuple[str, ...], over: str, op: str, what: str) -> None:
    out: torch.Tensor = c.out
    name, _ = s.begin(op)
    work = (*names, over)
    an, bn = a.var.name, b.var.name
    v = s.rec.contract(
        name,
        a,
        b,
        work,
        over,
        symbol=rf"\mathrm{{{name}}}",
        latex=rf"\mathrm{{{name}}} = \sum_{{{over}}} \mathrm{{{an}}}\, \mathrm{{{bn}}}",
        text=f"Σ_{over} {ax.ref_text(an, a.index)} × {ax.ref_text(bn, b.index)}",
        part_text=_part_texts(an, list(a.index), bn, list(b.index), over),
        total=out.detach().clone(),
        attrs={"library": op, "code": what},
    )
    s.bind(out, v)
    ours = s.rec.value(f"{name}.s", last=over)
    check(s, name, v, ours, f"{name}.s", f"{name}.s left to right")


def einsum(s: Session, c: Call) -> None:
    """``torch.einsum`` with two operands and one summed letter (or none): the equation's letters name the axes."""
    eq = c.args[0] if c.args and isinstance(c.args[0], str) else None
    ops = list(c.args[1:])
    if len(ops) == 1 and isinstance(ops[0], list | tuple):
        ops = list(ops[0])
    if eq is None or "..." in eq or "->" not in eq or len(ops) != 2:
        raise Unsupported("einsum other than 'ab,bc->ac' with two operands")
    lhs, rhs = eq.replace(" ", "").split("->")
    specs = lhs.split(",")
    letters = {ch: ch.lower() for ch in set(lhs + rhs) - {","}}
    if len(set(letters.values())) != len(letters) or any(not ch.isalpha() for ch in letters):
        raise Unsupported("einsum letters")
    summed = sorted(set("".join(specs)) - set(rhs))
    a, b = ops
    if len(summed) != 1 or any(len(set(sp)) != len(sp) for sp in specs):
        raise Unsupported("einsum summing over other than one letter")
    names = tuple(letters[ch] for ch in rhs)
    over = letters[summed[0]]
    va, vb = s.var(a), s.var(b)
    ia = [letters[ch] for ch in specs[0]]
    ib = [letters[ch] for ch in specs[1]]
    _contract(s, c, va(*ia), vb(*ib), names, over, "einsum", eq)
