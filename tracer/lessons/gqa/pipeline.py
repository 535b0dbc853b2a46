"""Lesson ``gqa``: grouped-query attention, H query heads sharing G key/value groups (Llama, Mistral, Qwen).

The queries are projected at full width and split into H heads, as in the
multi-head lesson; the keys and values are projected only G heads wide.
Query head h reads key/value group ``g(h) = ceil(h / r)`` with ``r = H / G``
heads per group: ``kh`` and ``vh`` are the groups repeated head by head, as
``repeat_interleave(r, dim=1)`` repeats them (each entry records which group
entry it reads).  Then causal attention per head, the heads joined back, and
a bias-free output projection.  G = H is multi-head attention; G = 1 is
multi-query attention.  What a KV cache keeps per token and layer is 2·G·d_h
numbers instead of 2·H·d_h: ``cache.*``.

Weights as LLMs-from-scratch's ``GroupedQueryAttention`` draws them:
``torch.manual_seed(123)``, then bias-free ``nn.Linear`` query (d_in ->
d_out), key and value (d_in -> G·d_h) and ``out_proj`` (d_out -> d_out).
The input is a batch of two stacked copies of the tutorial's tokens, as in
lesson multihead.  Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

import torch

from tracer.core.trace import Ref, Trace
from tracer.errors import InputError
from tracer.lessons.gqa import backward
from tracer.message import Message
from tracer.record import weights as wts
from tracer.record.blocks.attention import context, projection, scores
from tracer.record.blocks.backward import Backward
from tracer.record.blocks.heads import split
from tracer.record.blocks.masks import causal_masks, masked_softmax
from tracer.record.blocks.projections import sqrt_dk
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "projections", "heads", "attention", "output", "multihead", "cache")
HEADS, GROUPS, D_OUT = 4, 2, 8
COUNTS = ("cache.mha", "cache.gqa", "cache.ratio")
"""The nodes that count: printed as whole numbers."""

SYMS = {"W_query": "W^{Q}", "W_key": "W^{K}", "W_value": "W^{V}", "W_out": "W^{O}"}


def prepare(
    values: torch.Tensor, d_out: int = D_OUT, heads: int = HEADS, groups: int = GROUPS, **unknown: Any
) -> dict[str, Any]:
    """The module's weights, drawn in the order the module builds its layers."""
    if unknown:
        raise InputError(Message("lessons.takes_no_option", name=repr("gqa"), unknown=", ".join(sorted(unknown))))
    for name, n in (("heads", heads), ("groups", groups), ("d_out", d_out)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(Message("options.must_positive_whole_number", n=repr(n)), arg=name)
    if heads % groups:
        raise InputError(Message("options.must_divide_query_heads", heads=heads, groups=groups), arg="groups")
    if d_out % heads:
        raise InputError(Message("options.must_divisible_heads", heads=heads, d_out=d_out), arg="d_out")
    d_in, kv = int(values.shape[1]), groups * (d_out // heads)
    wts.check_size(int(values.shape[0]), d_in, d_out, batch=2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(wts.MODULE_SEED)
        layers = [wts.draw_linear(d_in, w, bias=False) for w in (d_out, kv, kv)]
        out = wts.draw_linear(d_out, d_out, bias=False)
    w = {name: layer.weight.T.contiguous() for name, layer in zip(wts.NAMES, layers, strict=True)}
    w["W_out"] = out.weight.T.contiguous()
    return {"weights": w, "heads": heads, "groups": groups}


def repeat(rec: Recorder, name: str, groups: Var, r: int, sym: str) -> Var:
    """``name[h,b,j,c]`` = ``groups[ceil(h/r),b,j,c]``: group g serves query heads (g−1)·r+1 … g·r."""
    data = groups.data.repeat_interleave(r, dim=0)
    return rec.apply(
        "repeat_interleave",
        name,
        data,
        [Ref(groups.name, (f"(h-1)//{r}+1", "b", "j", "c"))],
        ("h", "b", "j", "c"),
        symbol=rf"{sym}^{{(<j>)}}_{{<h>,<c>}}",
        latex=rf"{sym}^{{(<j>)}}_{{<h>,<c>}} = {sym}^{{(<j>)}}_{{g(<h>),<c>}}",
        text=f"{groups.name}[⌈<h>/{r}⌉,<b>,<j>,<c>]",
    )


def as_multihead(rec: Recorder, x: Var, w: dict[str, Var], shared: dict[str, Var], heads: int, r: int) -> None:
    """The same keys and values from multi-head weights: each group's columns repeated for its r heads.

    ``mha.W_key[k,c]`` reads ``W_key`` at the column its head's group has;
    projecting with it and splitting into ``heads`` heads gives ``mha.hk``,
    which ``check.kh`` compares with the repeated groups ``kh`` (0: equal).
    """
    for n, wn in (("k", "W_key"), ("v", "W_value")):
        src = w[wn]
        dh = int(shared[n].data.shape[-1])
        wide = src.data.reshape(src.data.shape[0], -1, dh).repeat_interleave(r, dim=1).reshape(src.data.shape[0], -1)
        col = f"((c-1)//{dh})//{r}*{dh}+(c-1)%{dh}+1"
        big = rec.apply(
            "repeat_interleave",
            f"mha.{wn}",
            wide,
            [Ref(src.name, ("k", col))],
            "kc",
            symbol=rf"\hat{{{SYMS[wn]}}}_{{<k,c>}}",
            latex=rf"\hat{{{SYMS[wn]}}}_{{<k,c>}} = {SYMS[wn]}_{{<k>,c'}}",
            text=f"{wn}[<k>, the same column in the group of the head of column <c>]",
        )
        proj = projection(rec, f"mha.{n}", x, big, ("b",), rf"{n}^{{(<i>)}}_{{<c>}}", SYMS[wn])
        heads_of = split(rec, f"mha.h{n}", proj, heads, n)
        rec.maxabsdiff(
            f"check.{n}h",
            heads_of,
            shared[n],
            latex=rf"\max \lvert {n}^{{\mathrm{{MHA}}}} - {n}^{{\mathrm{{GQA}}}} \rvert",
            text=f"max |mha.h{n} − {n}h|",
        )


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    weights: dict[str, torch.Tensor],
    heads: int,
    groups: int,
    backward_pass: Backward | None = None,
) -> Trace:
    """Run the lesson on a batch of two copies of the inputs (with ``backward_pass``, its gradients too)."""
    rec = Recorder(dtype)
    r = heads // groups
    with rec.stage("inputs"):
        x = rec.input("x", torch.stack((inputs, inputs)), "bik", symbol=r"x^{(<i>)}_{<k>}", text="x[<b>,<i>,<k>]")
        w = {n: rec.input(n, t, "kc", symbol=rf"{SYMS[n]}_{{<k,c>}}", text=f"{n}[<k>,<c>]") for n, t in weights.items()}
        _, up = causal_masks(rec, int(inputs.shape[0]))
    with rec.stage("projections"):
        full = {
            n: projection(rec, n, x, w[wn], ("b",), rf"{n}^{{(<i>)}}_{{<c>}}", SYMS[wn])
            for n, wn in (("q", "W_query"), ("k", "W_key"), ("v", "W_value"))
        }
    with rec.stage("heads"):
        hq = split(rec, "hq", full["q"], heads, "q")
        hk = split(rec, "hk", full["k"], groups, "k", "g")
        hv = split(rec, "hv", full["v"], groups, "v", "g")
        group = torch.arange(heads) // r + 1
        rec.input("group", group, "h", symbol=r"g(<h>)", text=f"⌈<h> / {r}⌉")
        kh = repeat(rec, "kh", hk, r, "k")
        vh = repeat(rec, "vh", hv, r, "v")
    with rec.stage("attention"):
        lead = ("h", "b")
        omega = scores(rec, "omega", hq, kh, lead, r"\omega_{<i,j>}")
        root = sqrt_dk(rec, kh)
        alpha = masked_softmax(rec, omega, up, root)
        z = context(rec, "z", alpha, vh, lead)
    with rec.stage("output"):
        h, b, t, dh = z.data.shape
        joined = rec.apply(
            "join_heads",
            "concat",
            z.data.permute(1, 2, 0, 3).reshape(b, t, h * dh),
            [Ref("z", (f"(k-1)//{dh}+1", "b", "i", f"(k-1)%{dh}+1"))],
            "bik",
            symbol=r"z^{(<i>)}_{<k>}",
            latex=rf"z^{{(<i>)}}_{{<k>}} = z^{{(<i>)}}_{{\lceil <k>/{dh} \rceil,\,(<k>-1) \bmod {dh} + 1}}",
            text=f"z[⌈<k>/{dh}⌉,<b>,<i>,(<k>−1) mod {dh} + 1]",
        )
        out = projection(rec, "out", joined, w["W_out"], ("b",), r"y^{(<i>)}_{<c>}", SYMS["W_out"], xsym=r"z^{(<i>)}")
    with rec.stage("multihead"):
        as_multihead(rec, x, w, {"k": kh, "v": vh}, heads, r)
    with rec.stage("cache"):
        mha = rec.constant("cache.mha", 2 * heads * dh, symbol=r"2 H d_h", text=f"2 × {heads} × {dh}")
        gqa = rec.constant("cache.gqa", 2 * groups * dh, symbol=r"2 G d_h", text=f"2 × {groups} × {dh}")
        rec.elementwise(
            "div",
            "cache.ratio",
            [mha(), gqa()],
            (),
            symbol=r"\frac{2 H d_h}{2 G d_h}",
            latex=r"\frac{2 H d_h}{2 G d_h} = \frac{H}{G}",
            text="cache.mha / cache.gqa",
        )
    info = {"heads": heads, "groups": groups, "group_size": r, "head_dim": dh, "modules": {"seed": wts.MODULE_SEED}}
    if backward_pass is not None:
        parts = {"hq": hq, "hk": hk, "kh": kh, "vh": vh, "alpha": alpha, "root": root, "up": up, "concat": joined}
        info["backward"] = backward.record(rec, x, w, parts | {"out": out}, backward_pass)
    trace = rec.trace({**meta, "lesson": "gqa", "tokens": tokens, "query": query, "stages": list(STAGES), **info})
    for name in COUNTS:
        trace.node(name).attrs["integer"] = True  # numbers in the cache, and H / G (G divides H): whole numbers
    return trace
