"""Lesson ``causal``: causal masks, dropout, and the compact causal-attention module.

1. On the ``linear`` variant's scores (``torch.manual_seed(789)``, bias-free
   ``nn.Linear`` query, key, value), the causal mask both ways the book shows:
   mask the softmax output with a lower-triangular matrix and renormalize
   each row (``masked.*``); or fill the scores above the diagonal with -inf
   before the softmax of ``scores / sqrt(d_k)`` (``causal.*``).  ``check.mask``
   records that the two agree.
2. Dropout on those weights: ``torch.manual_seed(123)``, ``nn.Dropout(0.5)``
   in training mode.  ``dropout.keep`` records which weights survive (the
   mask torch drew), ``dropout.kept`` the surviving weights and
   ``dropout.alpha`` the weights rescaled by 1/(1-p) = 2, which keeps each
   row's expected sum unchanged.
3. The compact module on a batch of two stacked copies of the inputs
   (``batch.*``): ``torch.manual_seed(123)``, bias-free ``nn.Linear`` query,
   key, value, dropout 0.0 (which changes nothing and is not recorded).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.lessons.causal import backward
from tracer.record import agree
from tracer.record import weights as wts
from tracer.record.blocks.attention import context, row_sum, scores
from tracer.record.blocks.backward import Backward
from tracer.record.blocks.masks import CAUSAL, causal_masks, masked_softmax
from tracer.record.blocks.projections import attention_core, inputs_and_weights, projections, sqrt_dk
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "projections", "scores", "normalize", "mask", "dropout", "batch")
DROPOUT = 0.5


def prepare(values: torch.Tensor, d_out: int = 2, dropout: float = DROPOUT, **unknown: Any) -> dict[str, Any]:
    """The book's weights for both parts, and the dropout mask torch draws at rate ``dropout``."""
    if unknown:
        raise InputError(f"lesson 'causal' takes no option {', '.join(sorted(unknown))}")
    if not 0.0 <= dropout < 1.0:
        raise InputError(f"the dropout rate must be at least 0 and below 1, got {dropout}")
    d_in, t = int(values.shape[1]), int(values.shape[0])
    linear, info = wts.choose("linear", d_in, d_out, int(values.shape[0]))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(wts.MODULE_SEED)
        drop = torch.nn.Dropout(dropout)
        drop.train()
        keep = (drop(torch.ones(t, t)) != 0).to(torch.float64)
    layers = wts.linear_layers(d_in, d_out, seed=wts.MODULE_SEED)
    module = {name: layer.weight.T.contiguous() for name, layer in zip(wts.NAMES, layers, strict=True)}
    return {"weights": linear, "weights_meta": info, "keep": keep, "module": module, "p": dropout}


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    weights: dict[str, torch.Tensor],
    weights_meta: dict[str, Any],
    keep: torch.Tensor,
    module: dict[str, torch.Tensor],
    backward_pass: Backward | None = None,
    p: float = DROPOUT,
) -> Trace:
    """Run the lesson (with ``backward_pass``, the gradients of its dropped-out attention too) at dropout rate ``p``."""
    rec = Recorder(dtype)
    t = int(inputs.shape[0])
    x, w = inputs_and_weights(rec, inputs, weights)
    q, k, v, omega, root, _scaled, alpha = attention_core(rec, x, w)
    with rec.stage("mask"):
        tri, up = causal_masks(rec, t)
        kept = rec.elementwise(
            "mul",
            "masked.w",
            [alpha("i", "j"), tri("i", "j")],
            "ij",
            symbol=r"\alpha_{<i,j>} M_{<i,j>}",
            latex=r"\alpha_{<i,j>} M_{<i,j>}",
            text="alpha[<i>,<j>] × mask.tril[<i>,<j>]",
        )
        total = row_sum(rec, "masked.sum", kept, r"S_{<i>}", r"\alpha_{<i,j>} M_{<i,j>}")
        renorm = rec.elementwise(
            "div",
            "masked.alpha",
            [kept("i", "j"), total("i")],
            "ij",
            symbol=r"\alpha^{M}_{<i,j>}",
            latex=r"\alpha^{M}_{<i,j>} = \frac{\alpha_{<i,j>} M_{<i,j>}}{S_{<i>}}",
            text="masked.w[<i>,<j>] / masked.sum[<i>]",
        )
        causal = masked_softmax(rec, omega, up, root, weights=CAUSAL)
        rec.maxabsdiff(
            "check.mask",
            renorm,
            causal,
            latex=rf"\max \lvert \alpha^{{M}} - {CAUSAL} \rvert",
            text="max |masked.alpha − causal.alpha|",
        )
    with rec.stage("dropout"):
        keep_var = rec.input(
            "dropout.keep", keep, "ij", symbol=r"B_{<i,j>}", text="1 if torch kept entry <i>,<j> else 0"
        )
        scale = rec.constant(
            "dropout.scale", 1.0 / (1.0 - p), symbol=r"\frac{1}{1-p}", text=f"1 / (1 − p) = 1 / (1 − {p})"
        )
        survived = rec.elementwise(
            "mul",
            "dropout.kept",
            [causal("i", "j"), keep_var("i", "j")],
            "ij",
            symbol=rf"{CAUSAL}_{{<i,j>}} B_{{<i,j>}}",
            latex=rf"{CAUSAL}_{{<i,j>}} B_{{<i,j>}}",
            text="causal.alpha[<i>,<j>] × dropout.keep[<i>,<j>]",
        )
        dropped = rec.elementwise(
            "mul",
            "dropout.alpha",
            [survived("i", "j"), scale()],
            "ij",
            symbol=r"\alpha^{\mathrm{drop}}_{<i,j>}",
            latex=rf"\alpha^{{\mathrm{{drop}}}}_{{<i,j>}} = \frac{{{CAUSAL}_{{<i,j>}} B_{{<i,j>}}}}{{1-p}}",
            text="dropout.kept[<i>,<j>] × dropout.scale",
        )
    with rec.stage("batch"):
        batch_module(rec, inputs, module, up)
    seed = wts.MODULE_SEED
    info = {"dropout": {"p": p, "seed": seed}, "module": {"kind": "linear", "seed": seed, "dropout": 0.0}}
    info |= {"lesson": "causal", "tokens": tokens, "query": query, "stages": list(STAGES), "weights": weights_meta}
    if backward_pass is not None:
        core = (q, k, v, root, up, causal, keep_var, scale, dropped)
        info["backward"] = backward.record(rec, x, w, core, backward_pass)
    return rec.trace({**meta, **info})


def batch_module(
    rec: Recorder, inputs: torch.Tensor, module: dict[str, torch.Tensor], up: Var, pre: str = "batch."
) -> Var:
    """The compact causal module on ``torch.stack((inputs, inputs))``: returns the context vectors."""
    batch = torch.stack((inputs, inputs))
    bx, bw = inputs_and_weights(rec, batch, module, pre=pre, axes="bik")
    with rec.stage("batch"):
        q, k, v = projections(rec, bx, bw, ("b",), pre=pre)
        omega = scores(rec, f"{pre}omega", q, k, ("b",), r"\omega_{<i,j>}")
        root = sqrt_dk(rec, k, pre=pre)
        alpha = masked_softmax(rec, omega, up, root, pre=pre)
        z = context(rec, f"{pre}z", alpha, v, ("b",))
        ref = _module_output(batch, module)
        mat = rec.tensor(
            f"{pre}mat.z",
            "module",
            ref,
            [bx, bw["W_query"], bw["W_key"], bw["W_value"]],
            "bic",
            latex=r"Z = \mathrm{CausalAttention}(X)",
            text="the book's CausalAttention module, matrix form",
        )
        rec.maxabsdiff(
            f"check.{pre}z",
            mat,
            z,
            latex=r"\max \lvert Z - z \rvert",
            text=f"max |{pre}mat.z − {pre}z|",
            bound=_module_bound(rec, bx, bw, (q, k, v), root, alpha, pre),
        )
    return z


def _module_bound(
    rec: Recorder, x: Var, w: dict[str, Var], qkv: tuple[Var, Var, Var], root: Var, alpha: Var, pre: str
) -> np.ndarray:
    """How far the module's matrix form may be from the loop form, by the maths (:mod:`tracer.record.agree`)."""
    e = [agree.matmul("bik,kc->bic", x, 0.0, w[n], 0.0) for n in wts.NAMES]
    q, k, v = qkv
    e_omega = agree.matmul("bic,bjc->bij", q, e[0], k, e[1])
    scaled = rec.var(f"{pre}neg.scaled")
    e_alpha = agree.softmax(alpha, scaled, agree.scaled(scaled, e_omega, root))
    return agree.matmul("bij,bjc->bic", alpha, e_alpha, v, e[2])


def _module_output(batch: torch.Tensor, w: dict[str, torch.Tensor]) -> torch.Tensor:
    """The book's compact module in matrix form (dropout 0.0)."""
    dt = batch.dtype
    q, k, v = (batch @ w[n].to(dt) for n in wts.NAMES)
    scores_ = q @ k.transpose(1, 2)
    t = batch.shape[1]
    mask = torch.triu(torch.ones(t, t), diagonal=1).bool()
    scores_ = scores_.masked_fill(mask, -torch.inf)
    weights_ = torch.softmax(scores_ / k.shape[-1] ** 0.5, dim=-1)
    return weights_ @ v
