"""Lesson ``trainable``: self-attention with trainable weights (scaled dot-product).

Queries, keys and values are projections of the inputs (``q = x W_query``
and so on: every product and running sum of every projection is a step);
the scores ``omega_ij = q(i)·k(j)`` are divided by ``sqrt(d_k)`` before the
softmax, so that their spread does not grow with the key size and push the
softmax towards a one-hot vector with vanishing gradients; the context
vectors weight the values.  The default weights are the book's
(``--weights rand``: ``torch.manual_seed(123)`` then three ``torch.rand(3, 2)``);
``--weights linear`` uses three bias-free ``nn.Linear(3, 2)`` layers after
``torch.manual_seed(789)``.  Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.record.pipelines.blocks import context, projection, scores, stable_softmax
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "projections", "scores", "normalize", "context", "matrix")


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


def prepare(values: torch.Tensor, weights: str = "rand", d_out: int = 2, **unknown: Any) -> dict[str, Any]:
    """Validate the lesson's options and build its weights."""
    from tracer.record import weights as w

    if unknown:
        raise InputError(f"lesson 'trainable' takes no option {', '.join(sorted(unknown))}")
    built, info = w.choose(weights, int(values.shape[1]), d_out, int(values.shape[0]))
    return {"weights": built, "weights_meta": info}


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    weights: dict[str, torch.Tensor],
    weights_meta: dict[str, Any],
) -> Trace:
    """Run the lesson on validated inputs and weights."""
    rec = Recorder(dtype)
    x, w = inputs_and_weights(rec, inputs, weights)
    q, k, v, omega, root, scaled, alpha = attention_core(rec, x, w)
    with rec.stage("normalize"):
        t_alpha = rec.softmax(
            "torch.alpha",
            scaled("i", "j"),
            "j",
            symbol=r"\mathrm{softmax}(\tilde\omega_{<i>})_{<j>}",
            latex=r"\mathrm{softmax}(\tilde\omega_{<i>})_{<j>}",
            text="torch.softmax(scaled[<i>])[<j>]",
        )
        rec.maxabsdiff(
            "check.torch",
            t_alpha,
            alpha,
            latex=r"\max \lvert \alpha^{\mathrm{torch}} - \alpha \rvert",
            text="max |torch.alpha − alpha|",
        )
    with rec.stage("context"):
        z = context(rec, "z", alpha, v, ())
    with rec.stage("matrix"):
        matrix_form(rec, x, w, q, k, v, omega, alpha, z, root)
    return rec.trace(
        {
            **meta,
            "lesson": "trainable",
            "tokens": tokens,
            "query": query,
            "stages": list(STAGES),
            "weights": weights_meta,
        }
    )


def matrix_form(
    rec: Recorder, x: Var, w: dict[str, Var], q: Var, k: Var, v: Var, omega: Var, alpha: Var, z: Var, root: Var
) -> None:
    """The same lesson as the book's matrix code, and how far each stage is from the loop form."""
    mats = {}
    for name, wname in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
        mats[name] = rec.tensor(
            f"mat.{name}",
            "matmul",
            x.data @ w[wname].data,
            [x, w[wname]],
            "ic",
            latex=rf"{name.upper()} = X W^{{{name.upper()}}}",
            text=f"X @ {wname}",
        )
    m_omega = rec.tensor(
        "mat.omega",
        "matmul",
        mats["q"].data @ mats["k"].data.T,
        [mats["q"], mats["k"]],
        "ij",
        latex=r"\Omega = Q K^{\top}",
        text="Q @ K.T",
    )
    m_alpha = rec.tensor(
        "mat.alpha",
        "softmax",
        torch.softmax(m_omega.data / root.data, dim=-1),
        [m_omega, root],
        "ij",
        latex=r"A = \mathrm{softmax}(\Omega / \sqrt{d_k})",
        text="softmax(mat.omega / sqrt_dk, dim=-1)",
    )
    m_z = rec.tensor(
        "mat.z",
        "matmul",
        m_alpha.data @ mats["v"].data,
        [m_alpha, mats["v"]],
        "ic",
        latex=r"Z = A V",
        text="mat.alpha @ V",
    )
    for name, mat, loop, mat_sym, loop_sym in (
        ("q", mats["q"], q, "Q", "q"),
        ("k", mats["k"], k, "K", "k"),
        ("v", mats["v"], v, "V", "v"),
        ("omega", m_omega, omega, r"\Omega", r"\omega"),
        ("alpha", m_alpha, alpha, "A", r"\alpha"),
        ("z", m_z, z, "Z", "z"),
    ):
        rec.maxabsdiff(
            f"check.{name}",
            mat,
            loop,
            latex=rf"\max \lvert {mat_sym} - {loop_sym} \rvert",
            text=f"max |mat.{name} − {name}|",
        )
