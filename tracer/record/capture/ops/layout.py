"""Layout ops: the same entries in another arrangement.

``view``/``reshape``, ``transpose``/``.T``/``permute``, ``unsqueeze``/
``squeeze``, ``expand``, ``cat``/``stack``, ``split``/``chunk``, basic
indexing and look-ups through an index tensor or mask each record a node of the moved entries whose references say, by
index arithmetic over its own axes, where each entry came from (``"2*h+c-2"``
for a head split: :func:`tracer.core.ids.index_expr`).  So explaining one
entry of a transposed, head-split tensor leads back to the products that
made it.  ``contiguous``, ``clone``, ``detach`` and ``.data`` change
nothing a reader can see and add no node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Call, Unsupported
from tracer.record.capture.ops.regroup import regroup
from tracer.record.capture.session import Session
from tracer.record.recorder import Var

ALIASES = {"contiguous", "clone", "detach", "data", "requires_grad_", "cpu"}


def _emit(
    s: Session,
    c: Call,
    out: torch.Tensor,
    op: str,
    refs: list[Ref],
    names: Sequence[str],
    text: str,
    attrs: dict[str, object] | None = None,
) -> Var:
    source = refs[0].node if len(refs) == 1 else None
    name, info = s.begin(c.key if c.key in ("T", "mT", "t") else op, source)
    info.derived = True
    if isinstance(c.out, tuple | list):
        info.out_index = next(n for n, t in enumerate(c.out) if t is out)
    v = s.rec.apply(op, name, out, refs, tuple(names), text=text, attrs={"func": c.key, **(attrs or {})})
    return s.bind(out, v)


def alias(s: Session, c: Call) -> None:
    """An op that changes no entry: the result is the operand's node."""
    if isinstance(c.out, torch.Tensor) and isinstance(c.args[0], torch.Tensor):
        s.bind(c.out, s.var(c.args[0]))


def permute(s: Session, c: Call) -> None:
    """``transpose``, ``.T``, ``.mT``, ``t()``, ``permute``, ``movedim`` …: axes reordered, names kept."""
    x, out = c.args[0], c.out
    vx = s.var(x)
    n = x.dim()
    order = list(range(n))
    if c.key in ("transpose", "swapaxes", "swapdims"):
        d0, d1 = int(c.arg(1, "dim0")) % n, int(c.arg(2, "dim1")) % n
        order[d0], order[d1] = order[d1], order[d0]
    elif c.key in ("T", "t", "numpy_T"):
        order = order[::-1]
    elif c.key in ("mT",):
        order[-2], order[-1] = order[-1], order[-2]
    elif c.key == "permute":
        dims = c.args[1:] if len(c.args) > 2 or not isinstance(c.args[1], Sequence) else c.args[1]
        dims = c.kwargs.get("dims", dims)
        order = [int(d) % n for d in dims]
    else:
        raise Unsupported(c.key)
    names = [vx.axes[d] for d in order]
    op = "transpose" if c.key in ("T", "t", "mT", "swapaxes", "swapdims") else c.key
    _emit(s, c, out, op, [Ref(vx.name, vx.axes)], names, f"{ax.ref_text(vx.name, vx.axes)}")


def reshape(s: Session, c: Call) -> None:
    """``view``/``reshape``/``flatten``/``unflatten``/``view_as``/``reshape_as``: same order, new shape."""
    x, out = c.args[0], c.out
    vx = s.var(x)
    src, dst = list(x.shape), list(out.shape)
    names, exprs = regroup(vx.axes, src, dst)
    op = "view" if c.key in ("view", "view_as") else "reshape" if c.key in ("reshape", "reshape_as") else c.key
    _emit(s, c, out, op, [Ref(vx.name, tuple(exprs))], names, ax.ref_text(vx.name, exprs))


def unsqueeze(s: Session, c: Call) -> None:
    """``unsqueeze(d)``: a new axis of size one."""
    x, out = c.args[0], c.out
    vx = s.var(x)
    d = int(c.arg(1, "dim")) % out.dim()
    names = list(vx.axes)
    names.insert(d, ax.fresh(vx.axes, ("u",)))
    _emit(s, c, out, "unsqueeze", [Ref(vx.name, vx.axes)], names, ax.ref_text(vx.name, vx.axes))


def squeeze(s: Session, c: Call) -> None:
    """``squeeze``: axes of size one dropped (read as entry 1)."""
    x, out = c.args[0], c.out
    vx = s.var(x)
    if out.dim() == x.dim():
        s.bind(out, vx)
        return
    dims = c.arg(1, "dim")
    drop = {d % x.dim() for d in ([dims] if isinstance(dims, int) else dims or range(x.dim())) if x.shape[d] == 1}
    exprs = ["1" if d in drop else vx.axes[d] for d in range(x.dim())]
    names = [a for d, a in enumerate(vx.axes) if d not in drop]
    _emit(s, c, out, "squeeze", [Ref(vx.name, tuple(exprs))], names, ax.ref_text(vx.name, exprs))


def expand(s: Session, c: Call) -> None:
    """``expand``/``expand_as``/``broadcast_to``: axes of size one repeated (each entry reads entry 1)."""
    x, out = c.args[0], c.out
    vx = s.var(x)
    lead = out.dim() - x.dim()
    names = list(vx.axes)
    for _ in range(lead):
        names.insert(0, ax.fresh(names, ("b", "h")))
    exprs = ["1" if x.shape[d] == 1 and out.shape[lead + d] != 1 else vx.axes[d] for d in range(x.dim())]
    _emit(s, c, out, "expand", [Ref(vx.name, tuple(exprs))], names, ax.ref_text(vx.name, exprs))


def getitem(s: Session, c: Call) -> None:
    """Basic indexing ``x[a, b:c, ..., None]``: whole numbers, slices, ``...`` and ``None``."""
    x, out = c.args[0], c.out
    vx = s.var(x)
    items = c.args[1] if isinstance(c.args[1], tuple) else (c.args[1],)
    if any(isinstance(i, torch.Tensor | list) for i in items):
        lookup(s, c, vx, items)
        return
    if any(not isinstance(i, int | slice | type(None) | type(Ellipsis)) or isinstance(i, bool) for i in items):
        raise Unsupported("indexing with a bool")
    real = sum(1 for i in items if i is not None and i is not Ellipsis)
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items = (*items[:k], *([slice(None)] * (x.dim() - real)), *items[k + 1 :])
    items = (*items, *([slice(None)] * (x.dim() - sum(1 for i in items if i is not None))))
    names: list[str] = []
    exprs: list[str] = []
    d = 0
    for it in items:
        if it is None:
            names.append(ax.fresh([*vx.axes, *names], ("u",)))
            continue
        size = x.shape[d]
        if isinstance(it, int):
            exprs.append(str(it % size + 1))
            s.taken.append((vx.name, vx.axes[d]))  # ``qkv[0]``: see :mod:`tracer.record.capture.selector`
        else:
            start, _stop, step = it.indices(size)
            a = vx.axes[d]
            names.append(a)
            if step == 1:
                exprs.append(a if start == 0 else f"{a}+{start}")
            else:
                exprs.append(f"{start + 1}+({a}-1)*{step}")
        d += 1
    _emit(s, c, out, "getitem", [Ref(vx.name, tuple(exprs))], names, ax.ref_text(vx.name, exprs))


MAX_LOOKUPS = 512
"""Entries an index tensor may pick before the look-up is an opaque step (each is a reference of its own)."""


def lookup(s: Session, c: Call, vx: Var, items: tuple[object, ...], prefer: tuple[str, ...] = ()) -> None:
    """``x[idx]``, ``x[:, idx]``, ``x[mask]``: one index tensor (whole numbers or a bool mask), the rest ``:``.

    Which entry each result entry is depends on the index's values, so each
    picked position is one reference, read only where the result's index
    axes point at it (elsewhere its index arithmetic is 0, out of range).
    """
    x, out = c.args[0], c.out
    adv = [n for n, it in enumerate(items) if isinstance(it, torch.Tensor | list)]
    if len(adv) != 1 or any(it != slice(None) for n, it in enumerate(items) if n != adv[0]):
        raise Unsupported("indexing with more than one index tensor, or one mixed with other than ':'")
    p = adv[0]
    idx = torch.as_tensor(items[p])
    if idx.dtype == torch.bool:
        k = idx.dim()
        if tuple(idx.shape) != tuple(x.shape[p : p + k]):
            raise Unsupported("a bool mask of another shape")
        picks = idx.nonzero()  # (N, k): the positions of the k masked axes each result entry takes
    elif not idx.is_floating_point():
        k = 1
        picks = (idx.reshape(-1, 1) % int(x.shape[p])).long()
    else:
        raise Unsupported("indexing with a float tensor")
    shape_i = (int(picks.shape[0]),) if idx.dtype == torch.bool else tuple(int(n) for n in idx.shape)
    if picks.shape[0] > MAX_LOOKUPS:
        raise Unsupported(f"a look-up of more than {MAX_LOOKUPS} entries")
    before, after = list(vx.axes[:p]), list(vx.axes[p + k :])
    new: list[str] = []
    for n in range(len(shape_i)):  # ``prefer``: what the index's own axes index (token ids: batch, tokens)
        new.append(ax.fresh([*before, *after, *new], (*prefer[n : n + 1], "n", "m", "r", "q")))
    names = [*before, *new, *after]
    refs = []
    for flat_i, pos in enumerate(picks.tolist()):
        at = [int(i) for i in np.unravel_index(flat_i, shape_i)] if shape_i else []
        conds = []
        for a, i, size in zip(new, at, shape_i, strict=True):
            sq = (size + 1) * (size + 1)
            conds.append(f"(1-((({a}-{int(i) + 1})*({a}-{int(i) + 1})+{sq - 1})//{sq}))")
        exprs = [str(q + 1) for q in pos]
        if conds:
            exprs[0] = f"{exprs[0]}*{'*'.join(conds)}"
        refs.append(Ref(vx.name, (*before, *exprs, *after)))
    where = f"{vx.name}[{', '.join([':'] * p + ['idx'] + [':'] * (x.dim() - p - k))}]"
    held = s.known(idx) if idx.dtype != torch.bool else None  # the index's axes are the result's new ones
    index: dict[str, object] = {"indices": held.name, "at": len(before)} if held is not None else {}
    _emit(s, c, out, "lookup", refs, names, f"the entry of {where} this index picks", index)


def cat(s: Session, c: Call) -> None:
    """``torch.cat(tensors, dim)``: operands one after another along ``dim``."""
    parts, out = list(c.arg(0, "tensors")), c.out
    dim = int(c.arg(1, "dim", 0)) % out.dim()
    first = s.var(parts[0])
    names = list(first.axes) if parts[0].dim() == out.dim() else list(ax.default(out.dim()))
    refs, offset = [], 0
    for t in parts:
        v = s.var(t)
        if t.dim() != out.dim():
            raise Unsupported("cat of an empty tensor")
        exprs = [names[d] if d != dim or offset == 0 else f"{names[d]}-{offset}" for d in range(out.dim())]
        refs.append(Ref(v.name, tuple(exprs)))
        offset += int(t.shape[dim])
    _emit(s, c, out, "cat", refs, names, f"{' | '.join(r.node for r in refs)} along axis {names[dim]}")


def stack(s: Session, c: Call) -> None:
    """``torch.stack(tensors, dim)``: operands as entries of a new axis."""
    parts, out = list(c.arg(0, "tensors")), c.out
    dim = int(c.arg(1, "dim", 0)) % out.dim()
    first = s.var(parts[0])
    names = list(first.axes)
    new = ax.fresh(names, ("b", "h", "s"))
    names.insert(dim, new)
    refs = []
    sq = (len(parts) + 1) * (len(parts) + 1)
    for m, t in enumerate(parts):
        v = s.var(t)
        if t.dim() == 0:  # read through a one-entry view, only where the new axis is m+1 (else index 0)
            hit = f"(1-((({new}-{m + 1})*({new}-{m + 1})+{sq - 1})//{sq}))"
            refs.append(Ref(entry(s, v).name, (hit,)))
            continue
        exprs = [names[d if d < dim else d + 1] for d in range(t.dim())]
        exprs[0] = f"{exprs[0]}+({new}-{m + 1})*{int(t.shape[0])}"  # in range only where the new axis is m+1
        refs.append(Ref(v.name, tuple(exprs)))
    text = f"{', '.join(r.node for r in refs)} stacked along {new}"
    if out.dim() == 1 and parts[0].dim() == 0:
        text = f"value <{new}> of the {len(parts)} stacked"
    _emit(s, c, out, "stack", refs, names, text)


def entry(s: Session, var: Var) -> Var:
    """A 0-d value as a one-entry vector (``N.put``), for a reference whose index arithmetic needs an axis."""
    name, info = s.begin("put", var.name)
    info.derived = True
    return s.rec.apply("view", name, var.data.reshape(1), [Ref(var.name, ())], ("w",), text=var.name)


def split(s: Session, c: Call) -> None:
    """``split``/``chunk``/``unbind``/``tensor_split``: consecutive pieces along one axis."""
    x, outs = c.args[0], c.out
    vx = s.var(x)
    dim = int(c.arg(1 if c.key == "unbind" else 2, "dim", 0)) % x.dim()
    if c.key == "unbind" or all(int(piece.shape[dim]) == 1 for piece in outs):
        s.taken.append((vx.name, vx.axes[dim]))  # taken apart: a q/k/v selector if a reshape made it
    offset = 0
    for piece in outs:
        if c.key == "unbind":
            exprs = [a if d != dim else str(offset + 1) for d, a in enumerate(vx.axes)]
            names = [a for d, a in enumerate(vx.axes) if d != dim]
            offset += 1
        else:
            a = vx.axes[dim]
            exprs = [b if d != dim or offset == 0 else f"{a}+{offset}" for d, b in enumerate(vx.axes)]
            names = list(vx.axes)
            offset += int(piece.shape[dim])
        _emit(s, c, piece, c.key, [Ref(vx.name, tuple(exprs))], names, ax.ref_text(vx.name, exprs))
