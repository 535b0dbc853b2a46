"""Which of the student's parameters is the query weight, the key weight, and so on.

Students name their weights as they like.  The rule, in order:

1. the book's attribute names: ``W_query``, ``W_key``, ``W_value`` (an
   ``nn.Parameter`` or an ``nn.Linear``) and ``out_proj``;
2. one fused projection (``3·d_out`` wide, an ``nn.Linear`` or an
   ``nn.Parameter``), cut in three in the order query, key, value;
3. otherwise the matrices in registration order, by shape: the first three
   that map ``d_in`` to ``d_out`` are query, key and value, and (lesson
   multihead) the ``d_out`` x ``d_out`` one is the output projection.

Every weight is handed to the lesson in the ``x @ W`` form: an ``nn.Linear``
weight is read as ``weight.T``; a raw ``nn.Parameter`` as it is when it is
``d_in`` x ``d_out`` and transposed when it is ``d_out`` x ``d_in``.  When the
roles cannot be told apart the check refuses, naming what it found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tracer.compare.check.model import Role
from tracer.errors import InputError

QKV = ("W_query", "W_key", "W_value")
BIAS = {"W_query": "b_query", "W_key": "b_key", "W_value": "b_value"}


@dataclass(frozen=True)
class Param:
    """A parameter of the student's module: its name, value, and whether an ``nn.Linear`` owns it."""

    name: str
    value: np.ndarray
    linear: bool
    owner: str  # module path of its owner ("" for the root)


def params(module: torch.nn.Module) -> list[Param]:
    """The module's parameters in registration order."""
    linear = {
        id(p): path
        for path, m in module.named_modules()
        if isinstance(m, torch.nn.Linear)
        for p in m.parameters(recurse=False)
    }
    owner = {id(p): path for path, m in module.named_modules() for p in m.parameters(recurse=False)}
    return [
        Param(n, p.detach().to(torch.float64).numpy().copy(), id(p) in linear, owner.get(id(p), ""))
        for n, p in module.named_parameters()
    ]


def assign(module: torch.nn.Module, d_in: int, d_out: int, out_proj: bool) -> dict[str, Role]:
    """Roles for the lesson's weights (and the output projection when ``out_proj``)."""
    ps = params(module)
    byname = {p.name: p for p in ps}
    roles: dict[str, Role] = {}
    booked = [b for b in (_book(byname, r) for r in QKV) if b is not None]
    mats = [p for p in ps if p.value.ndim == 2]
    if len(booked) == len(QKV):
        for r, p in zip(QKV, booked, strict=True):
            roles[r] = _weight(r, p, d_in, d_out)
    else:
        fused = [p for p in mats if sorted(p.value.shape) == sorted((d_in, 3 * d_out))]
        wide = [p for p in mats if _fits(p, d_in, d_out)]
        if len(fused) == 1 and not wide:
            roles.update(_fused(fused[0], ps, d_in, d_out))
        elif len(wide) >= 3 and (len(wide) == 3 or not out_proj or d_in != d_out):
            for r, p in zip(QKV, wide[:3], strict=False):
                roles[r] = _weight(r, p, d_in, d_out)
            if len(wide) > 3:
                extra = ", ".join(p.name for p in wide[3:])
                raise InputError(
                    f"cannot tell which weights are query, key and value: {len(wide)} matrices map d_in={d_in} "
                    f"to d_out={d_out} ({', '.join(p.name for p in wide)}); name them W_query, W_key, W_value "
                    f"(extra: {extra})"
                )
        else:
            found = ", ".join(f"{p.name} {tuple(p.value.shape)}" for p in ps) or "no parameters"
            raise InputError(
                f"cannot find query, key and value weights ({d_in} -> {d_out} each, or one fused "
                f"{d_in} -> {3 * d_out}) among the module's parameters: {found}"
            )
    for r in QKV:
        src = _source(ps, roles[r])
        if src is not None and src.linear:
            bias = byname.get(src.name.rsplit(".", 1)[0] + ".bias")
            if bias is not None and "[" not in roles[r].param:
                roles[BIAS[r]] = Role(BIAS[r], bias.name, "nn.Linear bias", bias.value)
    if out_proj:
        out = _out_proj(ps, byname, roles, d_out)
        roles.update(out)
    return roles


def _book(byname: dict[str, Param], role: str) -> Param | None:
    return byname.get(role) or byname.get(f"{role}.weight")


def _fits(p: Param, d_in: int, d_out: int) -> bool:
    if p.linear:
        return p.value.shape == (d_out, d_in)
    return p.value.shape in ((d_in, d_out), (d_out, d_in))


def _weight(role: str, p: Param, d_in: int, d_out: int) -> Role:
    v = p.value
    if p.linear:
        return Role(role, p.name, "nn.Linear weight, read as weight.T", v.T.copy())
    if v.shape == (d_in, d_out):
        return Role(role, p.name, "nn.Parameter, read as x @ W", v.copy())
    if v.shape == (d_out, d_in):
        return Role(role, p.name, "nn.Parameter, read as x @ W.T", v.T.copy())
    raise InputError(f"{p.name} has shape {tuple(v.shape)}; the {role} weight maps d_in={d_in} to d_out={d_out}")


def _fused(p: Param, ps: list[Param], d_in: int, d_out: int) -> dict[str, Role]:
    v = p.value.T if p.linear or p.value.shape == (3 * d_out, d_in) else p.value
    how = "fused projection cut in three (query, key, value)"
    out = {}
    bias = next((b for b in ps if b.name == p.name.rsplit(".", 1)[0] + ".bias"), None) if p.linear else None
    for n, r in enumerate(QKV):
        cut = slice(n * d_out, (n + 1) * d_out)
        out[r] = Role(r, f"{p.name}[{n * d_out}:{(n + 1) * d_out}]", how, v[:, cut].copy())
        if bias is not None:
            out[BIAS[r]] = Role(BIAS[r], f"{bias.name}[{n * d_out}:{(n + 1) * d_out}]", how, bias.value[cut].copy())
    return out


def _source(ps: list[Param], role: Role) -> Param | None:
    name = role.param.split("[", 1)[0]
    return next((p for p in ps if p.name == name), None)


def _out_proj(ps: list[Param], byname: dict[str, Param], roles: dict[str, Role], d_out: int) -> dict[str, Role]:
    used = {r.param.split("[", 1)[0] for r in roles.values()}
    named = byname.get("out_proj.weight")
    cands = [named] if named is not None else [p for p in ps if p.value.ndim == 2 and p.name not in used]
    if not cands:
        return {}
    if len(cands) > 1:
        raise InputError(
            f"cannot tell which matrix is the output projection: {', '.join(c.name for c in cands)}; name it out_proj"
        )
    p = cands[0]
    bias = byname.get(p.name.rsplit(".", 1)[0] + ".bias") if p.linear else None
    if p.value.shape != (d_out, d_out):
        other = {"W_out_other": Role("W_out_other", p.name, f"shape {tuple(p.value.shape)}", p.value.copy())}
        if bias is not None:
            other["b_out_other"] = Role("b_out_other", bias.name, "nn.Linear bias", bias.value.copy())
        return other
    how = "nn.Linear weight, read as weight.T" if p.linear else "nn.Parameter, read as x @ W"
    out = {"W_out": Role("W_out", p.name, how, p.value.T.copy() if p.linear else p.value.copy())}
    if bias is not None:
        out["b_out"] = Role("b_out", bias.name, "nn.Linear bias", bias.value.copy())
    return out
