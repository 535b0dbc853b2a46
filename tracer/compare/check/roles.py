"""Which of the student's parameters is the query weight, the key weight, and so on.

Students name their weights as they like.  The rule, in order:

1. names: the book's ``W_query``, ``W_key``, ``W_value`` and the common
   ones (:data:`NAMES`: ``query``, ``q_proj``, ``to_q``, ``wq`` …), each
   unique and shape-checked (keys and values narrower than the queries are
   grouped-query attention, :class:`Structural`), then a fused projection by
   name (:data:`FUSED`: ``c_attn``, ``qkv``, ``in_proj_weight`` …);
2. one fused projection by shape (``3·d_out`` wide, an ``nn.Linear`` or an
   ``nn.Parameter``), cut in three in the order query, key, value;
3. otherwise the matrices in registration order, by shape: the first three
   that map ``d_in`` to ``d_out`` are query, key and value, and (lesson
   multihead) the ``d_out`` x ``d_out`` one is the output projection (four
   ``d x d`` layers and nothing else, as the Annotated Transformer's
   ``clones(nn.Linear(d_model, d_model), 4)``: query, key, value, output).

Every weight is handed to the lesson in the ``x @ W`` form: an ``nn.Linear``
weight is read as ``weight.T``; a raw ``nn.Parameter`` as it is when it is
``d_in`` x ``d_out`` and transposed when it is ``d_out`` x ``d_in``.  When the
roles cannot be told apart the check refuses, naming what it found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tracer.compare.check.model import BIAS as BIAS
from tracer.compare.check.model import QKV as QKV
from tracer.compare.check.model import Role
from tracer.errors import InputError
from tracer.message import Message

LINEAR = Message("how.linear")
"""An ``nn.Linear`` weight, read as ``weight.T`` (``x @ W.T``)."""
PARAM = Message("how.param")
"""An ``nn.Parameter`` read as it is, ``x @ W``."""
BIAS_READ = Message("how.bias")
"""An ``nn.Linear``'s bias."""
WORD = {"W_query": Message("word.query"), "W_key": Message("word.key"), "W_value": Message("word.value")}
"""A weight's role as a sentence names it (``the key weight``)."""

NAMES = {
    "W_query": ("w_query", "query", "q_proj", "to_q", "q", "wq", "w_q", "q_linear", "linear_q", "query_proj", "proj_q"),
    "W_key": ("w_key", "key", "k_proj", "to_k", "k", "wk", "w_k", "k_linear", "linear_k", "key_proj", "proj_k"),
    "W_value": ("w_value", "value", "v_proj", "to_v", "v", "wv", "w_v", "v_linear", "linear_v", "value_proj", "proj_v"),
}
"""Names a weight goes by, per role (compared in lower case with the parameter's own name or its layer's)."""

FUSED = ("c_attn", "qkv", "in_proj_weight", "in_proj", "to_qkv", "w_qkv", "qkv_proj", "wqkv", "attn")
"""Names of one projection that computes queries, keys and values at once (cut in three, in that order)."""


class Structural(InputError):
    """The module computes another attention than the lesson's (``code`` names it in the catalogue)."""

    def __init__(self, code: str, detail: dict[str, str]) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def base(p: Param) -> str:
    """The name a parameter goes by: its layer's (``attn.q_proj.weight`` -> ``q_proj``) or its own, lower case."""
    parts = p.name.split(".")
    if len(parts) > 1 and parts[-1] in ("weight", "bias"):
        return parts[-2].lower()
    return parts[-1].lower()


def by_name(mats: list[Param], d_in: int, d_out: int, grouped: bool = False) -> dict[str, Param] | None:
    """Query, key and value weights found by their names (each name unique), shape-checked; None when not named.

    Keys and values narrower than the queries by a whole factor are
    grouped-query attention: :class:`Structural`, not a refusal, unless the
    lesson is grouped-query attention itself (``grouped``), where that is its
    structure and the key and value weights are taken as they are.
    """
    found = {}
    for role in QKV:
        cands = [p for p in mats if base(p) in NAMES[role] and not p.name.endswith(".bias")]
        if len(cands) != 1:
            return None
        found[role] = cands[0]
    width = {r: _width(p, d_in) for r, p in found.items()}
    if width["W_query"] == d_out and width["W_key"] == width["W_value"] and width["W_key"] not in (None, d_out):
        kv = width["W_key"] or 0
        if kv and d_out % kv == 0 and grouped:
            return found
        if kv and d_out % kv == 0:
            detail = f"{found['W_query'].name} {d_in} -> {d_out}, {found['W_key'].name} {d_in} -> {kv}"
            raise Structural("grouped_query", {"detail": detail})
    for r, p in found.items():
        if width[r] != d_out:
            shape = str(tuple(p.value.shape))
            raise InputError(
                Message("trouble.weight_shape", param=p.name, shape=shape, role=WORD[r], d_in=d_in, d_out=d_out)
            )
    return found


def _width(p: Param, d_in: int) -> int | None:
    """The output width of a weight that reads ``d_in`` numbers (None when it does not)."""
    shape = p.value.shape
    if p.linear:
        return int(shape[0]) if shape[1] == d_in else None
    if shape[0] == d_in:
        return int(shape[1])
    return int(shape[0]) if shape[1] == d_in else None


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


def assign(module: torch.nn.Module, d_in: int, d_out: int, out_proj: bool, grouped: bool = False) -> dict[str, Role]:
    """Roles for the lesson's weights (and the output projection when ``out_proj``); ``grouped``: :func:`by_name`."""
    ps = params(module)
    byname = {p.name: p for p in ps}
    roles: dict[str, Role] = {}
    mats = [p for p in ps if p.value.ndim == 2]
    named = by_name(mats, d_in, d_out, grouped)
    fused_named = [p for p in mats if base(p) in FUSED and sorted(p.value.shape) == sorted((d_in, 3 * d_out))]
    if named is not None:
        for r in QKV:
            width = _width(named[r], d_in) if grouped else None
            roles[r] = _weight(r, named[r], d_in, width or d_out)
    elif len(fused_named) == 1:
        roles.update(_fused(fused_named[0], ps, d_in, d_out))
    elif grouped and (cut := _grouped_fused(mats, d_in, d_out)) is not None:
        roles.update(_fused(cut[0], ps, d_in, d_out, cut[1]))
    else:
        fused = [p for p in mats if sorted(p.value.shape) == sorted((d_in, 3 * d_out))]
        wide = [p for p in mats if _fits(p, d_in, d_out)]
        if len(fused) == 1 and not wide:
            roles.update(_fused(fused[0], ps, d_in, d_out))
        elif len(wide) == 4 and out_proj and d_in == d_out and len(mats) == 4:  # four d x d layers: q, k, v, out
            for r, p in zip(QKV, wide[:3], strict=False):
                roles[r] = _weight(r, p, d_in, d_out)
        elif len(wide) >= 3 and (len(wide) == 3 or not out_proj or d_in != d_out):
            for r, p in zip(QKV, wide[:3], strict=False):
                roles[r] = _weight(r, p, d_in, d_out)
            if len(wide) > 3:
                extra = ", ".join(p.name for p in wide[3:])
                names = ", ".join(p.name for p in wide)
                said = Message(
                    "trouble.qkv_ambiguous", count=len(wide), d_in=d_in, d_out=d_out, names=names, extra=extra
                )
                raise InputError(said)
        else:
            latent(mats, d_in, d_out)
            found = ", ".join(f"{p.name} {tuple(p.value.shape)}" for p in ps) or Message("trouble.no_parameters")
            raise InputError(Message("trouble.qkv_missing", d_in=d_in, d_out=d_out, fused=3 * d_out, found=found))
    for r in QKV:
        src = _source(ps, roles[r])
        if src is not None and src.linear:
            bias = byname.get(src.name.rsplit(".", 1)[0] + ".bias")
            if bias is not None and "[" not in roles[r].param:
                roles[BIAS[r]] = Role(BIAS[r], bias.name, BIAS_READ, bias.value)
    if out_proj:
        out = _out_proj(ps, roles, d_out)
        roles.update(out)
    return roles


def latent(mats: list[Param], d_in: int, d_out: int) -> None:
    """Raise :class:`Structural` ``latent_kv`` when keys and values come up from one narrower latent.

    Latent attention (as in multi-head latent attention) maps the inputs
    down to ``r`` numbers (``kv_down``: ``d_in -> r``) and reads keys and
    values back up from them (``k_up``, ``v_up``: ``r -> d_out``): another
    computation than the lesson's, whose keys and values each have their own
    ``d_in -> d_out`` matrix.
    """
    for down in mats:
        r = _width(down, d_in)
        if r is None or r >= d_out:  # a latent is narrower than the keys it makes
            continue
        ups = [p for p in mats if p is not down and _width(p, r) == d_out]
        if len(ups) >= 2:
            names = ", ".join(p.name for p in ups)
            detail = {"down": down.name, "ups": names, "r": str(r), "d_in": str(d_in), "d_out": str(d_out)}
            raise Structural("latent_kv", detail)


def _fits(p: Param, d_in: int, d_out: int) -> bool:
    if p.linear:
        return p.value.shape == (d_out, d_in)
    return p.value.shape in ((d_in, d_out), (d_out, d_in))


def _weight(role: str, p: Param, d_in: int, d_out: int) -> Role:
    v = p.value
    if p.linear:
        return Role(role, p.name, LINEAR, v.T.copy())
    if v.shape == (d_in, d_out):
        return Role(role, p.name, PARAM, v.copy())
    if v.shape == (d_out, d_in):
        return Role(role, p.name, Message("how.param_t"), v.T.copy())
    shape = str(tuple(v.shape))
    raise InputError(Message("trouble.weight_shape_as", param=p.name, shape=shape, role=role, d_in=d_in, d_out=d_out))


def _fused(p: Param, ps: list[Param], d_in: int, d_out: int, kv: int = 0) -> dict[str, Role]:
    """A fused projection cut into query, key and value, ``d_out``, ``kv`` and ``kv`` wide (``kv = 0``: ``d_out``)."""
    kv = kv or d_out
    widths = (d_out, kv, kv)
    v = p.value.T if p.linear or p.value.shape == (sum(widths), d_in) else p.value
    how = Message("how.fused")
    out = {}
    bias = next((b for b in ps if b.name == _bias_name(p) and b.value.shape == (sum(widths),)), None)
    start = 0
    for r, width in zip(QKV, widths, strict=True):
        cut = slice(start, start + width)
        out[r] = Role(r, f"{p.name}[{start}:{start + width}]", how, v[:, cut].copy())
        if bias is not None:
            out[BIAS[r]] = Role(BIAS[r], f"{bias.name}[{start}:{start + width}]", how, bias.value[cut].copy())
        start += width
    return out


def _bias_name(p: Param) -> str:
    """The name of the bias that goes with weight ``p``: ``c_attn.bias`` for an ``nn.Linear``'s ``c_attn.weight``,
    ``in_proj_bias`` for ``nn.MultiheadAttention``'s ``in_proj_weight`` (a parameter named ``…weight``)."""
    if p.linear:
        return p.name.rsplit(".", 1)[0] + ".bias"
    return p.name[: -len("weight")] + "bias" if p.name.endswith("weight") else ""


def _grouped_fused(mats: list[Param], d_in: int, d_out: int) -> tuple[Param, int] | None:
    """Grouped-query attention's one fused projection by name: queries, then narrower keys and values.

    Phi-3's ``qkv_proj`` and the like put the ``d_out`` query columns first,
    then ``kv`` key and ``kv`` value columns, ``kv`` a whole fraction of
    ``d_out``: the weight and ``kv``, or None when no named weight is so wide.
    """
    for p in mats:
        width = _width(p, d_in)
        if base(p) not in FUSED or width is None or (width - d_out) % 2:
            continue
        kv = (width - d_out) // 2
        if 0 < kv < d_out and d_out % kv == 0:
            return p, kv
    return None


def _source(ps: list[Param], role: Role) -> Param | None:
    name = role.param.split("[", 1)[0]
    return next((p for p in ps if p.name == name), None)


OUT = ("out_proj", "c_proj", "o_proj", "to_out", "proj", "w_o", "wo", "w_out", "out", "fc_out", "linear_out", "dense")
"""Names of the output projection (the first one present wins)."""


def _out_proj(ps: list[Param], roles: dict[str, Role], d_out: int) -> dict[str, Role]:
    byname = {p.name: p for p in ps}
    used = {r.param.split("[", 1)[0] for r in roles.values()}
    free = [p for p in ps if p.value.ndim == 2 and p.name not in used]
    named = next((p for n in OUT for p in free if base(p) == n), None)
    cands = [named] if named is not None else free
    if not cands:
        return {}
    if len(cands) > 1:
        raise InputError(Message("trouble.out_proj_ambiguous", names=", ".join(c.name for c in cands)))
    p = cands[0]
    bias = byname.get(p.name.rsplit(".", 1)[0] + ".bias") if p.linear else None
    if p.value.shape != (d_out, d_out):
        other = {
            "W_out_other": Role(
                "W_out_other", p.name, Message("how.shape", shape=str(tuple(p.value.shape))), p.value.copy()
            )
        }
        if bias is not None:
            other["b_out_other"] = Role("b_out_other", bias.name, BIAS_READ, bias.value.copy())
        return other
    how = LINEAR if p.linear else PARAM
    out = {"W_out": Role("W_out", p.name, how, p.value.T.copy() if p.linear else p.value.copy())}
    if bias is not None:
        out["b_out"] = Role("b_out", bias.name, BIAS_READ, bias.value.copy())
    return out
