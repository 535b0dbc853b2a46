"""Products: ``@``/``matmul``/``mm``/``bmm``/``mv``/``dot``, ``F.linear`` and ``einsum``.

Each is recorded with :meth:`~tracer.record.recorder.Recorder.contract`:
``N.p`` every product, ``N.s`` every running sum left to right in the
dtype, and ``N`` torch's own result (what the program went on with), plus
``check.N``, the largest gap between torch's result and the left-to-right
sums (a BLAS kernel adds in another order).
"""

from __future__ import annotations

import numpy as np
import torch

from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Call, Unsupported, check, constant, magnitude, sums_bound
from tracer.record.capture.ops.equation import no_ellipsis
from tracer.record.capture.ops.reduce import flat
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
    if b.dim() >= 2:  # keys read transposed (their rows were tokens, i) give the key axis j, else features
        cols = [ax.fresh(used, _cols(vb.axes[-1]))]
        used += cols
    over = ax.fresh(used, (va.axes[-1], "k"))
    names = (*lead, *rows, *cols)
    shape = tuple(out.shape)
    ia = [*_lead(s, a, min(a.dim(), 2), lead, shape), *rows, over]
    ib = [*_lead(s, b, min(b.dim(), 2), lead, shape), over, *cols]
    op = c.key if c.key in ("dot", "inner", "mv", "mm", "bmm") else "matmul"
    _contract(s, c, va(*ia), vb(*ib), names, over, op, f"{va.name} @ {vb.name}")


def _cols(last: str) -> tuple[str, ...]:
    """Preferred names for a product's columns, by what the right operand's last axis indexes.

    Keys read transposed (their rows were tokens, ``i``) give the key axis
    ``j``; a head's features (``d``: weights times values, per head) stay a
    head's features; anything else is features ``c``.
    """
    return ("j", "c") if last == "i" else ("d", "c", "j") if last == "d" else ("c", "j")


def linear(s: Session, c: Call) -> None:
    """``F.linear(x, W, b) = x Wᵀ + b`` (what ``nn.Linear`` runs)."""
    x, w, bias = c.arg(0, "input"), c.arg(1, "weight"), c.arg(2, "bias")
    if not isinstance(x, torch.Tensor) or not isinstance(w, torch.Tensor) or w.dim() not in (1, 2) or x.dim() == 0:
        raise Unsupported("linear of these shapes")
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
    _biased(s, c, vx(*ia), vw(*iw), names, over, bias, "linear", r"x W^{\top} + b")


def addmm(s: Session, c: Call) -> None:
    """``baddbmm(M, A, B)``/``addmm(M, A, B)`` = ``M + A @ B`` (how ``nn.MultiheadAttention`` adds a mask).

    With ``beta``/``alpha`` (BLOOM's ``baddbmm(alibi, q, k, beta=1, alpha=1/√d)``,
    Python numbers) it is ``beta·M + alpha·(A @ B)``: ``N.alpha`` = alpha × ``N.xw``
    and ``N.beta`` = beta × M, each one rounding, where they are not 1.  With
    ``beta=0`` torch ignores M (GPT-2's upcast path passes ``torch.empty``
    scratch, whose entries may be anything, even nan): ``N.beta`` is the number 0.
    """
    m, a, b = c.arg(0, "input"), c.arg(1, "batch1", c.kwargs.get("mat1")), c.arg(2, "batch2", c.kwargs.get("mat2"))
    beta, alpha = c.kwargs.get("beta", 1), c.kwargs.get("alpha", 1)
    scalar = all(isinstance(f, int | float) and not isinstance(f, bool) for f in (alpha, beta))
    if not scalar or len(c.args) > 3:
        raise Unsupported(f"{c.key} with these beta or alpha")
    dims = 3 if c.key == "baddbmm" else 2
    if not all(isinstance(t, torch.Tensor) and t.dim() == dims for t in (a, b)) or not isinstance(m, torch.Tensor):
        raise Unsupported(f"{c.key} of these shapes")
    va, vb = s.var(a), s.var(b)
    lead = [va.axes[0]] if dims == 3 else []
    row = ax.fresh(lead, (va.axes[-2], "i"))
    col = ax.fresh([*lead, row], _cols(vb.axes[-1]))
    over = ax.fresh([*lead, row, col], (va.axes[-1], "k"))
    x, w = va(*lead, row, over), vb(*lead, over, col)
    latex = rf"{_times(beta)}M + {_times(alpha)}A B"
    _biased(s, c, x, w, (*lead, row, col), over, m, c.key, latex, (float(alpha), float(beta)))


def _times(f: float) -> str:
    return "" if f == 1 else f"{f:g}\\, "


def _scaled(s: Session, name: str, arg: Arg, f: float, names: tuple[str, ...], dtype: torch.dtype) -> Arg:
    """``f × arg`` as the node ``name`` (one rounding per entry), or ``arg`` itself when ``f`` is 1."""
    if f == 1:
        return arg
    k = constant(s, f, name, dtype)
    text = f"{f:g} × {ax.ref_text(arg.var.name, arg.index)}"
    return s.rec.elementwise("mul", name, [arg, k()], names, symbol="", latex=rf"{f:g}\, x", text=text)(*names)


def _biased(
    s: Session,
    c: Call,
    x: Arg,
    w: Arg,
    names: tuple[str, ...],
    over: str,
    bias: torch.Tensor,
    lib: str,
    latex: str,
    scale: tuple[float, float] = (1.0, 1.0),
) -> None:
    """``N.xw`` = Σ x·w left to right, ``N.loop`` = ``N.xw`` + bias, ``N`` = torch's value, and their check.

    Torch adds the bias inside its kernel (``addmm``), so ``N`` is held to
    ``N.loop`` within the bound of a sum of the products and the bias.
    ``scale`` = (alpha, beta): ``N.loop`` = alpha × ``N.xw`` + beta × bias,
    and the bound counts the two multiplications as two more terms.
    """
    out: torch.Tensor = c.out
    name, _ = s.begin(lib, None)
    mm = f"{name}.xw"
    xn, wn = x.var.name, w.var.name
    s.rec.contract(
        mm,
        x,
        w,
        (*names, over),
        over,
        symbol=rf"\mathrm{{{mm}}}",
        latex=rf"\sum_{{{over}}} \mathrm{{{xn}}}\, \mathrm{{{wn}}}",
        text=f"Σ_{over} {ax.ref_text(xn, x.index)} × {ax.ref_text(wn, w.index)}",
        part_text=_part_texts(xn, list(x.index), wn, list(w.index), over),
    )
    alpha, beta = scale
    ab = _scaled(s, f"{name}.alpha", s.rec.var(mm)(*names), alpha, names, out.dtype)
    if beta == 0:  # the bias is not read at all: not even a nan in it reaches the result
        vb = constant(s, 0.0, f"{name}.beta", out.dtype)()
    else:
        vb = _scaled(s, f"{name}.beta", s.read(bias, names, tuple(out.shape)), beta, names, out.dtype)
    sum_text = f"{ax.ref_text(ab.var.name, names)} + {ax.ref_text(vb.var.name, vb.index)}"
    loop = s.rec.elementwise("add", f"{name}.loop", [ab, vb], names, symbol="", latex=latex, text=sum_text)
    extra = np.abs(vb.aligned(names).double().numpy())
    mag = abs(alpha) * magnitude(s.rec.data(f"{mm}.p"), -1) + np.where(np.isfinite(extra), extra, 0.0)  # -inf: exact
    tv = s.rec.apply(
        "add",
        name,
        out,
        [Ref(ab.var.name, names), vb.ref],
        names,
        symbol=rf"\mathrm{{{name}}}",
        latex=rf"\mathrm{{{name}}} = {latex}",
        text=sum_text,
        attrs={"library": lib},
    )
    s.bind(out, tv)
    terms = int(x.var.data.shape[x.index.index(over)]) + 1 + (alpha != 1) + (beta != 1)
    bound = sums_bound(mag, terms, out.dtype)
    check(s, name, tv, loop.data, loop.name, f"{loop.name} ({mm} + bias, left to right)", bound)


def _part_texts(an: str, ia: list[str], bn: str, ib: list[str], over: str) -> tuple[str, str]:
    prev = [f"{over}-1" if i == over else i for i in ia]
    return (
        f"{ax.ref_text(an, ia)} × {ax.ref_text(bn, ib)}",
        f"Σ_{{m≤<{over}>}} {ax.ref_text(an, [('m' if i == over else i) for i in ia])} × "
        f"{ax.ref_text(bn, [('m' if i == over else i) for i in ib])}"
        if prev
        else "",
    )


def _contract(
    s: Session,
    c: Call,
    a: Arg,
    b: Arg | None,
    names: tuple[str, ...],
    over: str,
    op: str,
    what: str,
    name: str | None = None,
) -> None:
    out: torch.Tensor = c.out
    if name is None:
        name, _ = s.begin(op)
    work = (*names, over)
    an = a.var.name
    ta = ax.ref_text(an, a.index)
    if b is None:
        latex = rf"\mathrm{{{name}}} = \sum_{{{over}}} \mathrm{{{an}}}"
        text, part = (
            f"Σ_{over} {ta}",
            ("", f"Σ_{{m≤<{over}>}} {ax.ref_text(an, [('m' if i == over else i) for i in a.index])}"),
        )
    else:
        bn = b.var.name
        latex = rf"\mathrm{{{name}}} = \sum_{{{over}}} \mathrm{{{an}}}\, \mathrm{{{bn}}}"
        text, part = (
            f"Σ_{over} {ta} × {ax.ref_text(bn, b.index)}",
            _part_texts(an, list(a.index), bn, list(b.index), over),
        )
    v = s.rec.contract(
        name,
        a,
        b,
        work,
        over,
        symbol=rf"\mathrm{{{name}}}",
        latex=latex,
        text=text,
        part_text=part,
        total=out.detach().clone(),
        attrs={"library": op, "code": what},
    )
    s.bind(out, v)
    ours = s.rec.value(f"{name}.s", last=over)
    terms = s.rec.data(f"{name}.p") if b is not None else a.aligned(work)
    bound = sums_bound(magnitude(terms, -1), int(terms.shape[-1]), out.dtype)
    check(s, name, v, ours, f"{name}.s", f"{name}.s left to right", bound)


def einsum(s: Session, c: Call) -> None:
    """``torch.einsum`` of one or two operands: the equation's letters name the axes.

    A product with summed letters is recorded as the other products are
    (each product, running sums left to right, torch's total); several
    summed letters are first read as one axis of each operand, in the order
    they first appear (``N.left``/``N.right``, layout nodes naming their
    sources).  With nothing summed, two operands are one ``mul`` node and one
    operand is its axes reordered.  ``...`` stands for letters of its own
    (:func:`~tracer.record.capture.ops.equation.no_ellipsis`).  Not decomposed: a letter repeated within one
    operand (a diagonal), three or more operands.
    """
    eq = c.args[0] if c.args and isinstance(c.args[0], str) else None
    ops = list(c.args[1:])
    if len(ops) == 1 and isinstance(ops[0], list | tuple):
        ops = list(ops[0])
    if eq is None or len(ops) not in (1, 2) or not all(isinstance(t, torch.Tensor) for t in ops):
        raise Unsupported("einsum of other than one or two tensors")
    eq = no_ellipsis(eq.replace(" ", ""), [t.dim() for t in ops])
    lhs, rhs = eq.split("->") if "->" in eq else (eq, "")
    specs = lhs.split(",")
    if "->" not in eq:  # implicit output: the letters used once, in alphabetical order
        rhs = "".join(sorted(ch for ch in set(lhs) - {","} if lhs.count(ch) == 1))
    if len(specs) != len(ops) or any(len(set(sp)) != len(sp) for sp in specs) or len(set(rhs)) != len(rhs):
        raise Unsupported("einsum with a letter repeated within one operand (a diagonal)")
    if any(not ch.isalpha() for ch in lhs.replace(",", "") + rhs):
        raise Unsupported("einsum letters")
    out: torch.Tensor = c.out
    vs = [s.var(t) for t in ops]
    letters = _letters(specs, [v.axes for v in vs], rhs)
    summed = [ch for ch in dict.fromkeys(lhs.replace(",", "")) if ch not in rhs]
    names = tuple(letters[ch] for ch in rhs)
    if not summed:
        name, info = s.begin("einsum", vs[0].name if len(vs) == 1 else None)
        refs = [Ref(v.name, tuple(letters[ch] for ch in sp)) for v, sp in zip(vs, specs, strict=True)]
        text = " × ".join(ax.ref_text(r.node, r.index or ()) for r in refs)
        info.derived = len(vs) == 1
        v = s.rec.apply(
            "mul" if len(vs) == 2 else "permute",
            name,
            out,
            refs,
            names,
            text=text,
            attrs={"func": "einsum", "code": eq},
        )
        s.bind(out, v)
        return
    name, _ = s.begin("einsum")
    over = ax.fresh(names, ("m", "n"))
    reads: list[Arg] = []
    for side, (t, v, sp) in enumerate(zip(ops, vs, specs, strict=True)):
        dims = [sp.index(ch) for ch in summed if ch in sp]
        if len(dims) != len(summed):
            raise Unsupported("einsum summing a letter that one operand lacks")
        src, _m = flat(s, f"{name}.{('left', 'right')[side]}", v, t, dims) if len(dims) > 1 else (v, "")
        reads.append(
            src(*[letters[ch] for ch in sp if ch not in summed], over)
            if len(dims) > 1
            else v(*[over if ch in summed else letters[ch] for ch in sp])
        )
    _contract(s, c, reads[0], reads[1] if len(reads) > 1 else None, names, over, "einsum", eq, name=name)


def _letters(specs: list[str], axes: list[tuple[str, ...]], rhs: str) -> dict[str, str]:
    """Axis names for an einsum's letters: what the operand's axis under each letter already indexes.

    ``'bnhd,bmhd->bhnm'`` on queries and keys whose token axes are both
    ``i``: ``n`` is ``i`` (queries), and ``m``, a second token axis, is
    ``j`` (keys), so the scores read as every other scores do.  A letter
    whose operand axis names no batch, head, token or q/k/v part keeps its own letter.
    """
    out: dict[str, str] = {}
    order = list(dict.fromkeys(rhs + "".join(specs)))
    for ch in order:
        k = next(n for n, sp in enumerate(specs) if ch in sp)
        have = axes[k][specs[k].index(ch)] if len(axes[k]) == len(specs[k]) else ch.lower()
        if have == "i" and "i" in out.values():
            prefer: tuple[str, ...] = ("j",)  # a second token axis: the keys
        else:
            prefer = (have, ch.lower()) if have in ("b", "h", "i", "p") else (ch.lower(),)
        out[ch] = ax.fresh(out.values(), prefer)
    return out
