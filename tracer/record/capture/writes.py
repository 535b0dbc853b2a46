"""Writes into a tensor through indexing: ``scores[i, j] = torch.dot(x_i, x_j)``, ``buf.copy_(src)``.

The book fills score tensors in loops: ``attn_scores = torch.empty(6, 6)``,
then one ``attn_scores[i, j] = torch.dot(x_i, x_j)`` per pair.  Each write
is kept pending (which entries, and which recorded value went there) until
the code next uses the tensor; then the tensor is recorded once as a
``write`` node whose entries each name the value written into them, so
explaining ``attn_scores[2,1]`` leads to the dot product that made it, and
every later use reads the written values.

When the pending writes cover every entry, the tensor's earlier content
(``torch.empty``'s garbage) is not recorded at all.  When they do not, each
write is one node that reads the earlier state everywhere but in its region.
Which operand an entry reads is said with the references' index arithmetic
(:func:`tracer.core.ids.index_expr`): an index that falls outside its
operand is no input, so ``k*(1-((k-3)*(k-3)+35)//36)`` reads entry ``k``
everywhere but at 3.  A written Python number or 0-d tensor is read through
a one-entry view (``N.put``), which gives that arithmetic an axis to act on.

A region is whole numbers and slices (``...`` too); a value fills it
exactly or broadcasts from size one.  Anything else (a tensor index, a bool
mask) is recorded as an opaque step of the tensor after the write, and so is
a tensor another one views after an in-place change of the view
(``t[i][j] = v``, ``row = t[0]; row += 1``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace

import torch

from tracer.core.trace import TENSOR, Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Call, Unsupported, constant
from tracer.record.capture.ops.layout import entry
from tracer.record.capture.session import Session
from tracer.record.capture.site import variable
from tracer.record.capture.written import renamed, token_axes
from tracer.record.recorder import Var

MAX_EXPR = 200  # the longest index expression a trace file accepts

Item = int | tuple[int, int, int]  # a 0-based position, or (start, step, length) of a slice


@dataclass
class Write:
    """One write: its region, the reference that reads the value there, the values, its reserved name."""

    items: tuple[Item, ...]
    ref: Ref
    data: torch.Tensor
    name: str
    stage: str


@dataclass
class Pending:
    """The writes into one tensor since the code last used it, and what it held before them."""

    tensor: torch.Tensor
    base: Var | None
    before: torch.Tensor  # its content before the first pending write
    covered: torch.Tensor  # entries written so far
    writes: list[Write] = field(default_factory=list)


def prepare(s: Session, t: torch.Tensor) -> None:
    """Called before a write into ``t`` runs: remember what ``t`` holds (once per run of writes)."""
    if id(t) in s.pending and s.pending[id(t)].tensor is t:
        return
    s.flush = flush
    base = s.known(t)
    before = base.data if base is not None else t.detach().clone()
    s.pending[id(t)] = Pending(t, base, before, torch.zeros(t.shape, dtype=torch.bool))


def setitem(s: Session, c: Call) -> None:
    """``t[index] = value`` (and ``t.copy_(value)``, a write of every entry), kept pending."""
    t: torch.Tensor = c.args[0]
    index, value = (c.args[1], c.args[2]) if c.key == "__setitem__" else (Ellipsis, c.args[1])
    p = s.pending.get(id(t))
    if p is None or p.tensor is not t:
        raise Unsupported("a write whose target was not seen before it ran")
    items = region(index, tuple(t.shape))
    where = _where(items)
    if bool(p.covered[where].any()):  # written twice: record the first writes before this one
        flush(s, t)
        prepare(s, t)
        p = s.pending[id(t)]
    shape = tuple(i[2] for i in items if not isinstance(i, int))
    names = p.base.axes if p.base is not None else ax.default(t.dim())
    name, info = s.begin("write")
    if info.site is not None and not info.site.store:  # ``b.copy_(v)``: named after the tensor written into
        info.site = replace(info.site, store=variable(t) or "")
    stage = s.rec._stage
    ref, data = _value(s, value, name, items, names, tuple(t.shape), shape, t.dtype)
    p.writes.append(Write(items, ref, data, name, stage))
    p.covered[where] = True


def through_view(s: Session, t: torch.Tensor) -> None:
    """``t`` is a view that was just changed in place (``row = m[0]; row += 1``, ``m[i][j] = v``): mark ``m``.

    Which entries of the viewed tensor changed is not followed: when the
    code next uses it, its new content is recorded as an opaque step read
    from its earlier state and the view (:func:`_refresh`), so later reads
    see the changed values.
    """
    base = t._base
    got = s.vars.get(id(base)) if base is not None else None
    if base is not None and got is not None and got[0] is base:
        s.stale[id(base)] = (base, t)
        s.flush = flush


def written_back(s: Session, t: torch.Tensor, index: object, value: object) -> None:
    """``m[i] += v`` changes the view ``m[i]`` in place, then writes it back into ``m[i]``: nothing is stale then."""
    got = s.stale.get(id(t))
    if got is None or got[0] is not t or got[1] is not value or not isinstance(value, torch.Tensor):
        return
    with contextlib.suppress(Exception):
        same = t[index]  # type: ignore[index]
        if (same.data_ptr(), same.shape, same.stride()) == (value.data_ptr(), value.shape, value.stride()):
            del s.stale[id(t)]


def _refresh(s: Session, base: torch.Tensor, view_t: torch.Tensor) -> None:
    view, old = s.var(view_t), s.var(base)
    name, info = s.begin("view_write", old.name)
    info.receiver = old.name
    if "__setitem__ into a view" not in s.opaque:
        s.opaque.append("__setitem__ into a view")
    v = s.rec.apply(
        "opaque",
        name,
        base.detach().clone(),
        [Ref(old.name), Ref(view.name)],
        old.axes,
        text=f"{old.name} after an in-place change of its view {view.name}",
        attrs={"func": "__setitem__", "why": "an in-place change of a view of this tensor"},
        granularity=TENSOR,
    )
    s.bind(base, v)


def _where(items: tuple[Item, ...]) -> tuple[int | slice, ...]:
    """A region as a torch index again."""
    return tuple(i if isinstance(i, int) else slice(i[0], i[0] + i[1] * i[2], i[1]) for i in items)


def region(index: object, shape: tuple[int, ...]) -> tuple[Item, ...]:
    """The entries an index selects, per axis of the target: whole numbers and slices (``...`` widened)."""
    parts = index if isinstance(index, tuple) else (index,)
    out: list[object] = []
    for it in parts:
        if isinstance(it, torch.Tensor) and it.dim() == 0 and not it.is_floating_point() and it.dtype != torch.bool:
            it = int(it)
        if it is Ellipsis:
            out.extend([slice(None)] * (len(shape) - sum(1 for x in parts if x is not Ellipsis)))
        elif isinstance(it, bool) or not isinstance(it, int | slice):
            raise Unsupported(f"a write through an index of type {type(it).__name__}")
        else:
            out.append(it)
    if len(out) > len(shape):
        raise Unsupported("a write with more indices than axes")
    out.extend([slice(None)] * (len(shape) - len(out)))
    items: list[Item] = []
    for it, size in zip(out, shape, strict=True):
        if isinstance(it, int):
            if not -size <= it < size:
                raise Unsupported("a write out of range")
            items.append(it % size)
        else:
            assert isinstance(it, slice)
            start, stop, step = it.indices(size)
            items.append((start, step, len(range(start, stop, step))))
    return tuple(items)


def _inside(a: str, item: Item, size: int) -> str:
    """Index arithmetic that is 1 where axis ``a`` (1-based) is inside ``item``, else 0; "" when always 1."""
    sq = (size + 1) * (size + 1)
    if isinstance(item, int):
        return f"(1-((({a}-{item + 1})*({a}-{item + 1})+{sq - 1})//{sq}))"
    start, step, length = item
    if start == 0 and step == 1 and length == size:
        return ""
    off = f"({a}-{start + 1})"
    q = f"({off}//{step}//{length})" if step != 1 else f"({off}//{length})"
    same = f"(1-(({q}*{q}+{sq - 1})//{sq}))"
    return same if step == 1 else f"{same}*(1-(({off}%{step}+{step - 1})//{step}))"


def _value(
    s: Session,
    value: object,
    reader: str,
    items: tuple[Item, ...],
    names: tuple[str, ...],
    shape: tuple[int, ...],
    region_shape: tuple[int, ...],
    dtype: torch.dtype,
) -> tuple[Ref, torch.Tensor]:
    """The reference that reads the written value at the target's entries (none outside the region), and its data."""
    if isinstance(value, bool | int | float):
        var = constant(s, float(value), reader, dtype)
    elif isinstance(value, torch.Tensor):
        var = s.var(value)
    else:
        raise Unsupported(f"a write of a {type(value).__name__}")
    v = var.data
    slices = [(d, it) for d, it in enumerate(items) if not isinstance(it, int)]
    if v.dim() > len(slices) or any(
        int(n) not in (1, int(region_shape[len(region_shape) - v.dim() + k])) for k, n in enumerate(v.shape)
    ):
        raise Unsupported("a write of a value that does not fit its region")
    data = v.to(dtype).expand(region_shape).clone()
    lead = len(slices) - v.dim()
    conds = [_inside(names[d], it, shape[d]) for d, it in enumerate(items) if isinstance(it, int)]
    conds += [_inside(names[d], it, shape[d]) for d, it in slices[:lead]]
    exprs: list[str] = []
    for k, (d, it) in enumerate(slices[lead:]):
        assert not isinstance(it, int)
        start, step, length = it
        if int(v.shape[k]) == 1 and length != 1:
            exprs.append("1")
            conds.append(_inside(names[d], it, shape[d]))
        elif step == 1:
            exprs.append(names[d] if start == 0 else f"{names[d]}-{start}")
        else:
            far = length + shape[d] + 2  # pushes an entry between the steps past the end
            off = f"({names[d]}-{start + 1})"
            exprs.append(f"{off}//{step}+1+{far}*({off}%{step})")
    guard = "*".join(c for c in conds if c)
    if not exprs:  # a number or 0-d value: read through a one-entry view, so the guard has an axis
        var = entry(s, var)
        exprs = ["1"]
    if guard:
        exprs[0] = f"({exprs[0]})*{guard}"
    if any(len(e) > MAX_EXPR for e in exprs):
        raise Unsupported("a write whose region is too intricate to name")
    return Ref(var.name, tuple(exprs)), data


def _old(p: Pending, w: Write, names: tuple[str, ...], shape: tuple[int, ...]) -> tuple[str, ...]:
    """How a write's node reads the earlier state: every entry but those in the write's region."""
    conds = [c for c in (_inside(a, it, n) for a, it, n in zip(names, w.items, shape, strict=True)) if c]
    if not conds:
        return ()
    first = f"{names[0]}*(1-{'*'.join(conds)})"
    if len(first) > MAX_EXPR:
        raise Unsupported("a write whose region is too intricate to name")
    return (first, *names[1:])


def flush(s: Session, t: torch.Tensor) -> None:
    """Record the pending writes into ``t`` (see the module's docstring) and bind ``t`` to the result."""
    stale = s.stale.pop(id(t), None)
    if stale is not None and stale[0] is t:
        _refresh(s, t, stale[1])
    if id(t) not in s.pending:
        return
    p: Pending = s.pending.pop(id(t))
    shape = tuple(int(n) for n in t.shape)
    names = p.base.axes if p.base is not None else ax.default(t.dim())
    if not p.writes:
        if p.base is None:
            s.leaf(t, p.before)
        return
    where = [
        tuple(i if isinstance(i, int) else slice(i[0], i[0] + i[1] * i[2], i[1]) for i in w.items) for w in p.writes
    ]
    if bool(p.covered.all()):
        state = torch.empty(shape, dtype=t.dtype)
        for w, at in zip(p.writes, where, strict=True):
            state[at] = w.data
        named = names if p.base is not None else token_axes(s, p.writes, names)  # queries, keys: what was written
        refs = [renamed(w.ref, names, named) for w in p.writes]
        _node(s, t, p.writes[-1], state, refs, named, len(p.writes))
        return
    old = p.base if p.base is not None else s.leaf(t, p.before)
    for w, at in zip(p.writes, where, strict=True):
        state = old.data.to(t.dtype).clone()
        state[at] = w.data
        keep = _old(p, w, names, shape)
        refs = [Ref(old.name, keep), w.ref] if keep else [w.ref]
        old = _node(s, t, w, state, refs, names, 1)


def _node(
    s: Session, t: torch.Tensor, w: Write, state: torch.Tensor, refs: list[Ref], names: tuple[str, ...], n: int
) -> Var:
    """The ``write`` node of ``t``'s entries after the writes, under the name the last one reserved."""
    saved, s.rec._stage = s.rec._stage, w.stage
    try:
        v = s.rec.apply("write", w.name, state, refs, names, attrs={"func": "__setitem__", "writes": n})
    finally:
        s.rec._stage = saved
    return s.bind(t, v)
