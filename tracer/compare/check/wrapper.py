"""The book's ``MultiHeadAttentionWrapper``: a ``ModuleList`` of single causal heads, outputs concatenated.

Lesson ``multihead`` traces this form beside the split one (``wrap.*``: each
head a full causal attention with its own query, key and value weights, the
heads' context vectors joined along the last axis, no output projection).
A student's module is taken for a wrapper when one ``nn.ModuleList`` of
``num_heads`` entries holds every matrix it has.  Each head's weights are
found as for lesson ``causal`` (:mod:`.roles`) and stacked head-first, so the
lesson's ``wrap`` form computes the reference with them.

Each head's tensors are captured under its own name (``heads_0.attn_scores``,
``heads_1.attn_scores``); :func:`stacked` adds, for every name all heads
have, the heads' tensors stacked head-first (``heads_*.attn_scores``), which
the alignment reads like any other tensor.  Heads whose weights are equal
(one module repeated in the list, or one copied) compute the same thing: the
lesson's heads are independent, so :func:`shared` names them.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from tracer.compare.check import roles
from tracer.compare.check.model import Role, Seen
from tracer.errors import InputError
from tracer.message import Message
from tracer.record.capture.naming import pathname


def heads_of(module: torch.nn.Module, count: int) -> tuple[str, list[torch.nn.Module]] | None:
    """The path and entries of the ``ModuleList`` of ``count`` heads that holds every matrix of ``module``.

    One matrix may sit outside it: the output projection over all heads
    (the book's bonus wrapper, ``out_proj = nn.Linear(d_out * num_heads,
    d_out * num_heads)``), found by :func:`out_proj`.
    """
    for path, m in module.named_modules():
        if not path or not isinstance(m, torch.nn.ModuleList) or len(m) != count:
            continue
        if any(isinstance(e, torch.nn.Linear) for e in m):  # a list of layers (``clones(nn.Linear, 4)``), not heads
            continue
        inside = {id(p) for p in m.parameters()}
        outside = [p for p in module.parameters() if p.ndim == 2 and id(p) not in inside]
        if inside and len(outside) <= 1:
            return path, list(m)
    return None


def out_proj(module: torch.nn.Module, path: str, width: int) -> dict[str, Role]:
    """The output projection outside the heads' list: ``W_out`` (and ``b_out``), mapping ``width`` to ``width``.

    ``width`` is the heads' outputs side by side (heads x head width); no
    matrix outside the list means no projection (the book's plain wrapper).
    """
    outside = [p for p in roles.params(module) if not p.name.startswith(path + ".")]
    mats = [p for p in outside if p.value.ndim == 2]
    if not mats:
        return {}
    p = mats[0]
    if p.value.shape != (width, width):
        shape = str(tuple(p.value.shape))
        raise InputError(Message("trouble.out_proj_shape", param=p.name, shape=shape, path=path, width=width))
    how = roles.LINEAR if p.linear else roles.PARAM
    found = {"W_out": Role("W_out", p.name, how, p.value.T.copy() if p.linear else p.value.copy())}
    bias = next((b for b in outside if p.linear and b.name == p.name.rsplit(".", 1)[0] + ".bias"), None)
    if bias is not None:
        found["b_out"] = Role("b_out", bias.name, roles.BIAS_READ, bias.value.copy())
    return found


def assign(path: str, heads: list[torch.nn.Module], d_in: int, d_out: int) -> dict[str, Role]:
    """The heads' query, key and value weights (and biases), each stacked head-first: (heads, d_in, d_head).

    A head is ``d_out`` wide (the book's wrapper gives each head the full
    ``d_out``) or ``d_out / heads`` wide.
    """
    per = []
    for n, head in enumerate(heads):
        try:
            got = roles.assign(head, d_in, d_out, out_proj=False)
        except InputError:
            if d_out % len(heads):
                raise
            try:
                got = roles.assign(head, d_in, d_out // len(heads), out_proj=False)
            except InputError as e:
                said = Message("trouble.in_head", n=n + 1, path=f"{path}.{n}", problem=e.said or str(e))
                raise InputError(said) from None
        per.append(got)
    out = {}
    for role in per[0]:
        vals = [p[role].value for p in per if role in p]
        if len(vals) != len(per) or len({v.shape for v in vals}) != 1:
            raise InputError(Message("trouble.heads_unlike", path=path, role=role))
        names = ", ".join(f"{path}.{n}.{p[role].param}" for n, p in enumerate(per))
        out[role] = Role(role, names, Message("how.stacked", how=per[0][role].how), np.stack(vals))
    return out


def shared(found: dict[str, Role]) -> str:
    """``"heads.0 and heads.1 (W_query, …)"`` when two heads have equal weights, else ``""``."""
    if "W_query" not in found or found["W_query"].value.ndim != 3:
        return ""
    heads = [re.sub(r"^(.*?\.[0-9]+)\..*$", r"\1", n) for n in found["W_query"].param.split(", ")]
    for a in range(len(heads)):
        for b in range(a + 1, len(heads)):
            same = [r for r in roles.QKV if np.array_equal(found[r].value[a], found[r].value[b])]
            if same:
                return f"{heads[a]} = {heads[b]} ({', '.join(same)})"
    return ""


def stacked(seen: list[Seen], path: str, count: int) -> list[Seen]:
    """``seen`` with, after the last head's tensor of each name all heads have (one shape), the heads stacked."""
    pre = [pathname(f"{path}.{n}") + "." for n in range(count)]
    by_head: list[dict[str, int]] = [{} for _ in range(count)]
    for at, s in enumerate(seen):
        for n, p in enumerate(pre):
            if s.id.startswith(p):
                by_head[n].setdefault(s.id[len(p) :], at)
    after: dict[int, list[Seen]] = {}
    for rest in by_head[0]:
        group = [seen[h[rest]] for h in by_head if rest in h]
        if len(group) == count and len({g.value.shape for g in group}) == 1:
            star = Seen(pathname(path) + "_*." + rest, group[0].op, np.stack([g.value for g in group]), group[0].where)
            after.setdefault(max(h[rest] for h in by_head), []).append(star)
    out = []
    for at, s in enumerate(seen):
        out += [s, *after.get(at, [])]
    return out
