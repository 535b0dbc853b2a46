"""Queries, keys and values from recorded inputs and weights: the first steps of every lesson with projections."""

from __future__ import annotations

import math

import torch

from tracer.record.blocks.attention import projection, scores, stable_softmax
from tracer.record.recorder import Recorder, Var


def projections(
    rec: Recorder, x: Var, w: dict[str, Var], lead: tuple[str, ...] = (), pre: str = ""
) -> tuple[Var, Var, Var]:
    """Queries, keys and values: ``q = x W_query`` and so on, every product and running sum recorded."""
    with rec.stage("projections"):
        q = projection(rec, f"{pre}q", x, w["W_query"], lead, r"q^{(<i>)}_{<c>}", r"W^{Q}")
        k = projection(rec, f"{pre}k", x, w["W_key"], lead, r"k^{(<i>)}_{<c>}", r"W^{K}")
        v = projection(rec, f"{pre}v", x, w["W_value"], lead, r"v^{(<i>)}_{<c>}", r"W^{V}")
    return q, k, v


def attention_core(
    rec: Recorder, x: Var, w: dict[str, Var], lead: tuple[str, ...] = ()
) -> tuple[Var, Var, Var, Var, Var, Var, Var]:
    """Projections, scores, scaling and stable softmax; returns q, k, v, omega, sqrt_dk, scaled, alpha."""
    q, k, v = projections(rec, x, w, lead)
    with rec.stage("scores"):
        omega = scores(rec, "omega", q, k, lead, r"\omega_{<i,j>}")
        root = sqrt_dk(rec, k)
        axes = omega.axes
        scaled = rec.elementwise(
            "div",
            "scaled",
            [omega(*axes), root()],
            axes,
            symbol=r"\tilde\omega_{<i,j>}",
            latex=r"\tilde\omega_{<i,j>} = \frac{\omega_{<i,j>}}{\sqrt{d_k}}",
            text=f"omega[{','.join(f'<{a}>' for a in axes)}] / sqrt_dk",
        )
    with rec.stage("normalize"):
        alpha = stable_softmax(rec, scaled, r"\tilde\omega_{<i,j>}")
    return q, k, v, omega, root, scaled, alpha


def sqrt_dk(rec: Recorder, k: Var, pre: str = "") -> Var:
    """The constant sqrt(d_k) the scores are divided by."""
    d_k = int(k.data.shape[-1])
    return rec.constant(f"{pre}sqrt_dk", math.sqrt(d_k), symbol=r"\sqrt{d_k}", text=f"sqrt(d_k) = sqrt({d_k})")


def inputs_and_weights(
    rec: Recorder, inputs: torch.Tensor, weights: dict[str, torch.Tensor], pre: str = "", axes: str = "ik"
) -> tuple[Var, dict[str, Var]]:
    """Record the inputs and the three weight matrices (names prefixed with ``pre``)."""
    syms = {"W_query": "W^{Q}", "W_key": "W^{K}", "W_value": "W^{V}"}
    with rec.stage("inputs"):
        x = rec.input(f"{pre}x", inputs, axes, symbol=r"x^{(<i>)}_{<k>}", text="x(<i>)_<k>")
        w = {
            name: rec.input(f"{pre}{name}", t, "kc", symbol=rf"{syms[name]}_{{<k,c>}}", text=f"{pre}{name}[<k>,<c>]")
            for name, t in weights.items()
        }
    return x, w
