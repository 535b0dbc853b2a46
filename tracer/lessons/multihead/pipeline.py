"""Lesson ``multihead``: two ways to run several causal attention heads.

(a) ``wrap.*``: a wrapper of two causal heads, each built like the compact
    causal module: ``torch.manual_seed(123)`` once, then head 1's query, key
    and value ``nn.Linear`` layers, then head 2's; the heads' outputs are
    concatenated along the last axis (``wrap.concat``).
(b) ``split.*``: one set of projections split into heads:
    ``torch.manual_seed(123)``, ``d_out=2``, ``num_heads=2``, bias-free
    ``nn.Linear`` query, key, value, then an output projection
    ``nn.Linear(2, 2)`` with bias.  Queries, keys and values are computed at
    full width, viewed as heads (``split.hq`` …), attended per head, joined
    back (``split.concat``) and projected (``split.out``).

Both run on a batch of two stacked copies of the inputs.  Head-first ids make
one head's steps a slice: ``wrap.q[2]`` is every query of head 2.
"""

from __future__ import annotations

from typing import Any

import torch

from tracer.core.trace import TENSOR, Ref, Trace
from tracer.errors import InputError
from tracer.lessons.multihead import backward
from tracer.record import weights as wts
from tracer.record.blocks.attention import context, projection, scores
from tracer.record.blocks.backward import Backward
from tracer.record.blocks.masks import causal_masks, masked_softmax
from tracer.record.blocks.projections import sqrt_dk
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "wrapper", "split")
HEADS = 2


def prepare(values: torch.Tensor, d_out: int = 2, **unknown: Any) -> dict[str, Any]:
    """Both modules' weights, drawn as the book draws them (the lesson's two heads)."""
    if unknown:
        raise InputError(f"lesson 'multihead' takes no option {', '.join(sorted(unknown))}")
    return with_heads(values, d_out, HEADS)


def with_heads(values: torch.Tensor, d_out: int, heads: int) -> dict[str, Any]:
    """:func:`prepare` for ``heads`` heads: what ``attn-trace check --heads`` builds its reference from.

    Not a lesson option: the lesson's report and narrative are written for two heads.
    """
    d_in = int(values.shape[1])
    wts.check_size(int(values.shape[0]), d_in, d_out, batch=2 * heads)  # 2 copies of the inputs, each in every head
    if heads < 1 or d_out % heads:
        raise InputError(f"d_out must be divisible by the {heads} heads, got {d_out}")
    layers_ = wts.linear_layers(d_in, d_out, seed=wts.MODULE_SEED, count=heads)
    wrap = {name: torch.stack([layers_[3 * h + n].weight.T for h in range(heads)]) for n, name in enumerate(wts.NAMES)}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(wts.MODULE_SEED)
        layers = [wts.draw_linear(d_in, d_out, bias=False) for _ in range(3)]
        out_proj = wts.draw_linear(d_out, d_out)
    split = {name: layer.weight.T.contiguous() for name, layer in zip(wts.NAMES, layers, strict=True)}
    split["W_out"] = out_proj.weight.T.contiguous()
    assert out_proj.bias is not None
    split["b_out"] = out_proj.bias
    out: dict[str, Any] = {"wrap": wrap, "split": split}
    return out if heads == HEADS else {**out, "heads": heads}


def _inputs(rec: Recorder, inputs: torch.Tensor) -> tuple[Var, Var]:
    with rec.stage("inputs"):
        batch = torch.stack((inputs, inputs))
        x = rec.input("x", batch, "bik", symbol=r"x^{(<i>)}_{<k>}", text="x[<b>,<i>,<k>]")
        _, up = causal_masks(rec, int(inputs.shape[0]))
    return x, up


def wrapper_form(
    rec: Recorder,
    x: Var,
    up: Var,
    w: dict[str, torch.Tensor],
    out: dict[str, torch.Tensor] | None = None,
    keep: dict[str, Var] | None = None,
) -> Var:
    """(a) Two full causal heads side by side, outputs concatenated (then ``out``'s projection, when given).

    ``keep``, when given, receives the vars the backward pass reads, as :func:`split_form`'s does.
    """
    syms = {"W_query": "W^{Q}", "W_key": "W^{K}", "W_value": "W^{V}"}
    with rec.stage("wrapper"):
        wv = {
            n: rec.input(f"wrap.{n}", t, "hkc", symbol=rf"{syms[n]}_{{<k,c>}}", text=f"wrap.{n}[<h>,<k>,<c>]")
            for n, t in w.items()
        }
        lead = ("h", "b")
        q = projection(rec, "wrap.q", x, wv["W_query"], lead, r"q^{(<i>)}_{<c>}", r"W^{Q}")
        k = projection(rec, "wrap.k", x, wv["W_key"], lead, r"k^{(<i>)}_{<c>}", r"W^{K}")
        v = projection(rec, "wrap.v", x, wv["W_value"], lead, r"v^{(<i>)}_{<c>}", r"W^{V}")
        omega = scores(rec, "wrap.omega", q, k, lead, r"\omega_{<i,j>}")
        root = sqrt_dk(rec, k, pre="wrap.")
        alpha = masked_softmax(rec, omega, up, root, pre="wrap.")
        z = context(rec, "wrap.z", alpha, v, lead)
        joined = z.data.permute(1, 2, 0, 3).reshape(z.data.shape[1], z.data.shape[2], -1)
        dh = int(z.data.shape[3])
        concat = rec.apply(  # one step on the page; each entry's reference lets verify recompute it
            "concat",
            "wrap.concat",
            joined,
            [Ref(z.name, (f"(o-1)//{dh}+1", "b", "i", f"(o-1)%{dh}+1"))],
            "bio",
            granularity=TENSOR,
            latex=_joined(int(z.data.shape[0])),
            text="head outputs side by side: torch.cat([head(x) for head in heads], dim=-1)",
        )
        result = concat if out is None else _projected(rec, "wrap.", concat, out, keep)
    if keep is not None:
        keep |= wv | {n: var for n, var in (("q", q), ("k", k), ("v", v))}
        keep |= {"root": root, "up": up, "alpha": alpha, "concat": concat, "out": result}
    return result


def _projected(
    rec: Recorder, pre: str, joined: Var, w: dict[str, torch.Tensor], keep: dict[str, Var] | None = None
) -> Var:
    """``joined @ W_out + b_out``: the output projection over all heads (``b_out`` zero when not given)."""
    wo = rec.input(f"{pre}W_out", w["W_out"], "kc", symbol=r"W^{O}_{<k,c>}", text=f"{pre}W_out[<k>,<c>]")
    b = w.get("b_out", torch.zeros(w["W_out"].shape[1], dtype=w["W_out"].dtype))
    bias = rec.input(f"{pre}b_out", b, "c", symbol=r"b_{<c>}", text=f"{pre}b_out[<c>]")
    proj = projection(rec, f"{pre}proj", joined, wo, ("b",), r"o^{(<i>)}_{<c>}", r"W^{O}", xsym=r"z^{(<i>)}")
    if keep is not None:
        keep["W_out"] = wo
    return rec.elementwise(
        "add",
        f"{pre}out",
        [proj("b", "i", "c"), bias("c")],
        "bic",
        symbol=r"y^{(<i>)}_{<c>}",
        latex=r"y^{(<i>)}_{<c>} = o^{(<i>)}_{<c>} + b_{<c>}",
        text=f"{pre}proj[<b>,<i>,<c>] + {pre}b_out[<c>]",
    )


def _joined(heads: int) -> str:
    """``Z = [Z^{(1)} Z^{(2)}]``: the heads' outputs side by side, as LaTeX."""
    if heads == 2:
        return r"Z = [\,Z^{(1)} \;\; Z^{(2)}\,]"
    return rf"Z = [\,Z^{{(1)}} \;\; \cdots \;\; Z^{{({heads})}}\,]"


def split_form(
    rec: Recorder, x: Var, up: Var, w: dict[str, torch.Tensor], heads_: int = HEADS, keep: dict[str, Var] | None = None
) -> Var:
    """(b) Full-width projections viewed as heads, attended per head, joined, projected.

    ``keep``, when given, receives the vars the backward pass reads (weights,
    heads, weights of attention, the joined heads, the output).
    """
    syms = {"W_query": "W^{Q}", "W_key": "W^{K}", "W_value": "W^{V}", "W_out": "W^{O}"}
    with rec.stage("split"):
        wv = {
            n: rec.input(f"split.{n}", w[n], "kc", symbol=rf"{syms[n]}_{{<k,c>}}", text=f"split.{n}[<k>,<c>]")
            for n in (*wts.NAMES, "W_out")
        }
        bias = rec.input("split.b_out", w["b_out"], "c", symbol=r"b_{<c>}", text="split.b_out[<c>]")
        full = {}
        for name, wname in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
            full[name] = projection(
                rec, f"split.{name}", x, wv[wname], ("b",), rf"{name}^{{(<i>)}}_{{<c>}}", syms[wname]
            )
        heads = {}
        for name, var in full.items():
            b, t, d_out = var.data.shape
            view = var.data.reshape(b, t, heads_, d_out // heads_).permute(2, 0, 1, 3)
            dh = d_out // heads_
            heads[name] = rec.apply(
                "split_heads",
                f"split.h{name}",
                view,
                [Ref(var.name, ("b", "i", f"{dh}*h+c-{dh}"))],
                "hbic",
                granularity=TENSOR,
                latex=rf"{name}^{{(h)}} = {name}_{{[\dots,\,(h-1)d_h+1 \,:\, h\,d_h]}}",
                text=f"split.{name}.view(b, T, heads, d_h).transpose(1, 2)",
                symbol=rf"{name}^{{(<i>)}}_{{<c>}}",
            )
        lead = ("h", "b")
        omega = scores(rec, "split.omega", heads["q"], heads["k"], lead, r"\omega_{<i,j>}")
        root = sqrt_dk(rec, heads["k"], pre="split.")
        alpha = masked_softmax(rec, omega, up, root, pre="split.")
        z = context(rec, "split.z", alpha, heads["v"], lead)
        h, b, t, dh = z.data.shape
        joined = rec.apply(
            "join_heads",
            "split.concat",
            z.data.permute(1, 2, 0, 3).reshape(b, t, h * dh),
            [Ref(z.name, (f"(k-1)//{dh}+1", "b", "i", f"(k-1)%{dh}+1"))],
            "bik",
            granularity=TENSOR,
            latex=_joined(h),
            text="split.z.transpose(1, 2).reshape(b, T, d_out)",
            symbol=r"z^{(<i>)}_{<k>}",
        )
        proj = projection(
            rec, "split.proj", joined, wv["W_out"], ("b",), r"o^{(<i>)}_{<c>}", r"W^{O}", xsym=r"z^{(<i>)}"
        )
        out = rec.elementwise(
            "add",
            "split.out",
            [proj("b", "i", "c"), bias("c")],
            "bic",
            symbol=r"y^{(<i>)}_{<c>}",
            latex=r"y^{(<i>)}_{<c>} = o^{(<i>)}_{<c>} + b_{<c>}",
            text="split.proj[<b>,<i>,<c>] + split.b_out[<c>]",
        )
    if keep is not None:
        keep |= wv | {f"h{n}": heads[n] for n in ("q", "k", "v")}
        keep |= {"root": root, "up": up, "alpha": alpha, "concat": joined, "out": out}
    return out


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    wrap: dict[str, torch.Tensor],
    split: dict[str, torch.Tensor],
    heads: int = HEADS,
    wrap_out: dict[str, torch.Tensor] | None = None,
    backward_pass: Backward | None = None,
) -> Trace:
    """Run both forms on the batch of two copies (the wrapper has as many heads as its weights stack); with
    ``backward_pass``, both forms' gradients too."""
    rec = Recorder(dtype)
    x, up = _inputs(rec, inputs)
    wparts: dict[str, Var] = {}
    wrapper_form(rec, x, up, wrap, wrap_out, wparts)
    parts: dict[str, Var] = {}
    split_form(rec, x, up, split, heads, parts)
    seed = wts.MODULE_SEED
    info: dict[str, Any] = {"heads": heads}
    info["modules"] = {"wrap": {"seed": seed}, "split": {"seed": seed, "out_bias": True}}
    if backward_pass is not None:
        info["backward"] = backward.record(rec, x, wparts, parts, backward_pass)
    return rec.trace({**meta, "lesson": "multihead", "tokens": tokens, "query": query, "stages": list(STAGES), **info})
