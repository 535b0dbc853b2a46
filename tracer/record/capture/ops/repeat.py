"""Copies with entry-level provenance: ``repeat_interleave``, ``repeat``, ``embedding`` and ``gather``.

Grouped-query attention repeats each key/value head for several query heads
(``repeat_interleave``, or ``expand`` then ``reshape``); a language model
looks its token ids up in an embedding table; ``gather`` picks entries by an
index tensor.  Each result entry is a copy of one source entry, so the node
records, by index arithmetic, which one: ``repeat_interleave(r, dim)`` reads
entry ``(n-1)//r+1`` along ``dim``, ``repeat`` entry ``(n-1)%size+1``.  A
look-up by token ids or by ``gather``'s index depends on the index values,
so each picked entry is one reference (at most
:data:`~tracer.record.capture.ops.layout.MAX_LOOKUPS`), as ``x[idx]`` is.
"""

from __future__ import annotations

import numpy as np
import torch

from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.common import Call, Unsupported
from tracer.record.capture.ops.layout import MAX_LOOKUPS, _emit, lookup
from tracer.record.capture.session import Session


def repeat_interleave(s: Session, c: Call) -> None:
    """``x.repeat_interleave(r, dim)``: each entry along ``dim`` repeated ``r`` times in place."""
    x, out = c.args[0], c.out
    r, dim = c.arg(1, "repeats"), c.arg(2, "dim")
    if isinstance(r, torch.Tensor) and r.numel() == 1:
        r = int(r)
    if not isinstance(x, torch.Tensor) or not isinstance(r, int) or dim is None:
        raise Unsupported("repeat_interleave with a tensor of repeats or without dim")
    vx = s.var(x)
    d = dim % x.dim()
    exprs = [f"({a}-1)//{r}+1" if n == d else a for n, a in enumerate(vx.axes)]
    _emit(s, c, out, "repeat_interleave", [Ref(vx.name, tuple(exprs))], vx.axes, ax.ref_text(vx.name, exprs))


def repeat(s: Session, c: Call) -> None:
    """``x.repeat(*sizes)``: the whole tensor tiled (new leading axes in front)."""
    x, out = c.args[0], c.out
    sizes = c.args[1:] if len(c.args) > 2 or isinstance(c.arg(1, "repeats"), int) else tuple(c.arg(1, "repeats"))
    if not isinstance(x, torch.Tensor) or not all(isinstance(n, int) for n in sizes):
        raise Unsupported("repeat with these sizes")
    vx = s.var(x)
    lead = out.dim() - x.dim()
    names = list(vx.axes)
    for _ in range(lead):
        names.insert(0, ax.fresh(names, ("r", "q")))
    exprs = [a if sizes[lead + n] == 1 else f"({a}-1)%{x.shape[n]}+1" for n, a in enumerate(vx.axes)]
    _emit(s, c, out, "repeat", [Ref(vx.name, tuple(exprs))], names, ax.ref_text(vx.name, exprs))


def embedding(s: Session, c: Call) -> None:
    """``F.embedding(ids, weight)``/``nn.Embedding``: each id's row of the table, as ``weight[ids]``."""
    ids, weight = c.arg(0, "input"), c.arg(1, "weight")
    if c.arg(3, "max_norm") is not None:
        raise Unsupported("embedding with max_norm (it changes the table in place)")
    if not isinstance(ids, torch.Tensor) or not isinstance(weight, torch.Tensor) or ids.is_floating_point():
        raise Unsupported("embedding of these arguments")
    s.var(ids)  # the ids are an input of the trace too
    call = Call("embedding", c.func, (weight, ids), {}, c.out)
    prefer = ("b", "i") if ids.dim() == 2 else ("i",) if ids.dim() == 1 else ()  # (batch,) tokens
    lookup(s, call, s.var(weight), (ids,), prefer)


def gather(s: Session, c: Call) -> None:
    """``torch.gather(x, dim, index)``: ``out[…, n, …] = x[…, index[…, n, …], …]`` entry by entry."""
    x, dim, index, out = c.args[0], c.arg(1, "dim"), c.arg(2, "index"), c.out
    if not isinstance(x, torch.Tensor) or not isinstance(index, torch.Tensor) or not isinstance(dim, int):
        raise Unsupported("gather of these arguments")
    if out.numel() > MAX_LOOKUPS:
        raise Unsupported(f"a gather of more than {MAX_LOOKUPS} entries")
    vx = s.var(x)
    d = dim % x.dim()
    names = list(vx.axes)
    refs = []
    for pos in np.ndindex(*out.shape):
        conds = []
        for a, i, size in zip(names, pos, out.shape, strict=True):
            sq = (size + 1) * (size + 1)
            conds.append(f"(1-((({a}-{i + 1})*({a}-{i + 1})+{sq - 1})//{sq}))")
        picked = int(index[pos]) % int(x.shape[d]) + 1
        exprs = [f"{picked}*{'*'.join(conds)}" if n == d else f"{p + 1}" for n, p in enumerate(pos)]
        refs.append(Ref(vx.name, tuple(exprs)))
    _emit(s, c, out, "gather", refs, names, f"the entry of {vx.name} the index picks along axis {d + 1}")
