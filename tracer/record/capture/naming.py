"""Final ids for a capture: names that follow the user's code (see ``docs/capture.md``).

Ops record under provisional names (``§12``); when the capture ends each gets
its id from the facts :class:`~tracer.record.capture.session.Info` kept:

* a parameter or buffer: its path in the module (``W_query.weight``,
  ``heads_0.mask``: a ``ModuleList`` index joins its name with ``_``);
* an input: the captured function's parameter name (``x``); a tensor made
  inside the call: what made it (``ones``, ``rand``);
* an op: the variable its statement assigns (``attn_scores``), prefixed by
  the user module it ran in (``heads_0.attn_scores``); earlier ops of the
  same statement are ``<variable>.<op>`` (``attn_weights.div``); an
  in-place op is ``<receiver>.<op>``; re-assigning a variable from itself
  is ``<old>.<op>`` (``queries.view``); otherwise a library module's path
  (``out_proj``) or the op's name (``cat``);
* a write through indexing (``scores[i, j] = …``): the tensor written into
  (``scores``), and the ops of that statement ``scores.<op>`` (``scores.dot``);
* a Python number: ``<reader>.c``; clashes get ``_2``, ``_3`` ….

Every name, reference, template and attribute is then rewritten in one pass
(:mod:`tracer.record.capture.rename`).
"""

from __future__ import annotations

import re

import torch

from tracer.record.capture.session import Info, Session
from tracer.record.capture.site import BY_ORDER, Site

_PROV = re.compile(r"§[0-9]+")
_BAD = re.compile(r"[^A-Za-z0-9_]")


def pathname(path: str) -> str:
    """A module path as an id prefix: ``heads.0.W_key`` -> ``heads_0.W_key``."""
    out: list[str] = []
    for seg in path.split("."):
        seg = _BAD.sub("_", seg)
        if not seg:
            continue
        if not (seg[0].isalpha() or seg[0] == "_"):
            if out:
                out[-1] += f"_{seg}"
                continue
            seg = f"m{seg}"
        out.append(seg)
    return ".".join(out)


def _ident(name: str, fallback: str) -> str:
    clean = _BAD.sub("_", name)
    return clean if re.search(r"[A-Za-z]", clean) and not clean[0].isdigit() else fallback


def qualified(roots: list[torch.nn.Module], prefix: dict[int, str]) -> dict[int, str]:
    """id(tensor) -> path of every parameter and buffer of the root modules."""
    out: dict[int, str] = {}
    for root in roots:
        pre = prefix.get(id(root), "")
        for path, t in (*root.named_parameters(remove_duplicate=False), *root.named_buffers(remove_duplicate=False)):
            out.setdefault(id(t), pathname(f"{pre}.{path}" if pre else path))
    return out


def final_names(s: Session, order: list[str], nodes: list[str]) -> dict[str, str]:
    """Provisional base name -> id stem, for the bases in ``order`` (recording order).

    ``nodes`` are all provisional node names (``§3.p``, ``check.§3`` …): a
    stem is only taken if none of its node names clashes with one given out.
    """
    subs: dict[str, list[str]] = {}
    for full in nodes:
        for m in _PROV.finditer(full):
            subs.setdefault(m.group(0), []).append(full)
    qmap = qualified(s.roots, s.prefix)
    last: dict[int, str] = {}
    for b in order:
        info = s.info[b]
        if info.kind == "op":
            last[info.group] = b
    done: dict[str, str] = {}
    taken: set[str] = set()
    bound: dict[tuple[str, str], str] = {}
    made: dict[tuple[str, str], tuple[str, int, str]] = {}  # the statement that bound each variable last

    def names_of(base: str, stem: str) -> list[str]:
        return [_PROV.sub(lambda m: stem if m.group(0) == base else m.group(0), f) for f in subs.get(base, [base])]

    def claim(name: str, base: str) -> str:
        cand, n = name, 1
        while cand in taken or any(f in taken for f in names_of(base, cand)):
            n += 1
            cand = f"{name}_{n}"
        taken.update(names_of(base, cand))
        taken.add(cand)
        return cand

    _number_iterations(s, order)
    later: list[str] = []
    for b in order:
        info = s.info[b]
        t = s.tensors.get(b)
        q = qmap.get(id(t)) if t is not None else None
        if info.kind == "const":
            continue
        if q is not None:
            done[b] = claim(q, b)
        elif info.kind == "leaf":
            done[b] = claim(_ident(info.hint, "input"), b)
        elif _inner(info, b, last, s) and info.module_out and not info.opened and not _is_target(info):
            done[b] = claim(pathname(info.module_out), b)  # ``self.c_attn(x).split(…)``: the code names ``c_attn``
        elif _inner(info, b, last, s) and not (info.derived and info.source in done):
            later.append(b)  # named after the statement's result, once that has its name
        else:
            given = s.arg_names.get(id(t)) if t is not None else None
            done[b] = claim(_op_name(s, b, info, last, done, bound, given, made), b)
    for b in later:
        info = s.info[b]
        op = _ident(info.op.rstrip("_"), "op")
        targets = [_ident(t, "") for t in (info.site.targets if info.site else ())]
        end = done.get(last[info.group], "")
        if len(targets) > 1 and all(targets):  # ``q, k, v = …``: an op before the split is all three's
            end = pathname(info.scope) + "." + "_".join(targets) if info.scope else "_".join(targets)
        done[b] = claim(f"{end}.{op}" if end else op, b)
    for b in order:
        info = s.info[b]
        if info.kind == "const":
            reader = done.get(info.hint, "const")
            done[b] = claim(f"{reader}.c", b)
    return done


def steps(s: Session, names: dict[str, str]) -> dict[str, int]:
    """Final id -> generation step, for the ops of a user module called more than once (once per token).

    A KV-cache loop calls the module once per token: an op of its n-th call
    is at step n (``k_new_2``: the ``k_new`` of the second call).
    """
    out: dict[str, int] = {}
    for b, info in s.info.items():
        if info.kind == "op" and b in names and info.call is not None and s.calls.get(info.call[0], 0) > 1:
            out[names[b]] = info.call[1]
    return out


def _number_iterations(s: Session, order: list[str]) -> None:
    """``q, k, v = [f(x) for x in zip(…)]``: the n-th iteration's ops make the n-th value."""
    runs: dict[tuple[int, int], list[int]] = {}
    for b in order:
        site = s.info[b].site
        if site is not None and site.element == BY_ORDER and site.kind == "assign":
            got = runs.setdefault((site.frame, site.start), [])
            if s.info[b].group not in got:
                got.append(s.info[b].group)
    for b in order:
        info = s.info[b]
        site = info.site
        if site is not None and site.element == BY_ORDER and site.kind == "assign" and info.out_index is None:
            info.out_index = runs[(site.frame, site.start)].index(info.group)


def _statement(site: Site) -> tuple[str, int, str]:
    """Which statement of the code a site is, whatever the call or iteration running it (file:line, start, function)."""
    return site.where, site.start, site.code


def _is_target(info: Info) -> bool:
    """Whether a library module's path is also a name its statement assigns (``qkv = self.qkv(x).reshape(…)``)."""
    targets = info.site.targets if info.site else ()
    return info.module_out is not None and info.module_out.rpartition(".")[2] in targets


def _inner(info: Info, b: str, last: dict[int, str], s: Session) -> bool:
    """An op of a statement that assigns a name, other than the statement's result."""
    targets = info.site.targets if info.site else ()
    return bool(targets) and not _is_last(info, b, last, s)


def _is_last(info: Info, b: str, last: dict[int, str], s: Session) -> bool:
    end = s.info[last[info.group]]
    return last[info.group] == b or (
        info.out_index is not None and end.out_index is not None and info.site is not None and end.site is not None
        and info.site.lasti == end.site.lasti
    )  # fmt: skip


def _op_name(
    s: Session,
    b: str,
    info: Info,
    last: dict[int, str],
    done: dict[str, str],
    bound: dict[tuple[str, str], str],
    given: str | None,
    made: dict[tuple[str, str], tuple[str, int, str]],
) -> str:
    scope = pathname(info.scope)
    pre = f"{scope}." if scope else ""
    op = _ident(info.op.rstrip("_"), "op")
    targets = [_ident(t, "") for t in (info.site.targets if info.site else ())]
    is_last = _is_last(info, b, last, s)
    site = info.site
    if info.opened and site is not None and site.code in _PROJECTIONS and site.element is not None:
        return f"{pre}in_proj_{'qkv'[site.element % 3]}"  # ``return proj[0], proj[1], proj[2]``
    if targets and all(targets) and is_last:
        var = targets[info.out_index] if info.out_index is not None and info.out_index < len(targets) else targets[0]
        if len(targets) > 1 and info.out_index is None:
            var = "_".join(targets)
        if info.opened:
            var = _documented(var, info.op)
            proj = bound.get((scope, "out_proj"))
            if var == "context" and proj is not None and _reads(s, info, proj, done):  # the out-projection, moved
                var = "out_proj"
        key = (scope, var)
        old = bound.get(key)
        if old is None:
            name = pre + var
        elif info.derived and _reads(s, info, old, done):  # ``k = k.view(…).transpose(1, 2)``: k moved
            name = f"{done[info.source or '']}.{op}"
        elif _reads(s, info, old, done):  # ``att = att.masked_fill(…)``: att, then what was done to it
            name = f"{old}_{op}" if old.rpartition(".")[2] == var else f"{pre}{var}_{op}"
        elif site is not None and made.get(key) == _statement(site):  # the same statement again: a loop, a call
            name = pre + var  # per token: the variable's next value (``k_new_2``), not the module it calls
        elif info.module_out and not info.opened:  # ``x = self.proj(y)``: the module the code calls
            name = pathname(info.module_out)
        else:
            name = pre + var
        bound[key] = name
        if site is not None:
            made[key] = _statement(site)
        return name
    if info.derived and info.source is not None and info.source in done:
        return f"{done[info.source]}.{op}"
    if targets and all(targets):
        return f"{pre}{'_'.join(targets)}.{op}"
    store = _ident(info.site.store, "") if info.site else ""
    if store:  # ``scores[i, j] = torch.dot(…)``: the tensor written into, and what was written
        return pre + store if info.op == "write" else f"{pre}{store}.{op}"
    if info.receiver is not None and info.receiver in done:
        return f"{done[info.receiver]}.{op}"
    if info.module_out:
        return pathname(info.module_out)
    if given:  # the unnamed result handed to a module as its input ``x``
        return pre + _ident(given, op)
    return pre + op


_PROJECTIONS = ("_in_projection_packed", "_in_projection")
"""torch's helpers that make q, k and v from the packed or the three separate in-projection weights."""


def _documented(var: str, op: str) -> str:
    """The documented name of one of ``nn.MultiheadAttention``'s steps, from torch's variable and the op.

    torch reuses ``attn_output_weights`` for the scores and the weights, and
    ``attn_output`` for the context and the out-projection; the steps get
    the names its documentation uses: ``in_proj``, ``scores``, ``weights``,
    ``context``, ``out_proj`` (``q``, ``k``, ``v``, ``q_scaled`` and the masks
    keep torch's own).
    """
    if var == "proj":
        return "in_proj"
    if var == "attn_output_weights":
        return "scores" if op in ("bmm", "baddbmm", "matmul") else "weights"
    if var == "attn_output":
        return "out_proj" if op == "linear" else "context"
    return var


def _reads(s: Session, info: Info, old: str, done: dict[str, str]) -> bool:
    """Whether an op reads the value named ``old``, directly or through layout ops of its own statement."""
    src = info.source
    for _ in range(16):
        if src is None:
            return False
        if done.get(src) == old:
            return True
        up = s.info.get(src)
        if up is None or up.group != info.group or not up.derived:
            return False
        src = up.source
    return False
