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

from typing import Any

import torch

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.lessons.trainable import backward
from tracer.message import Message
from tracer.record import agree
from tracer.record.blocks.attention import context
from tracer.record.blocks.backward import Backward
from tracer.record.blocks.projections import attention_core, inputs_and_weights
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "projections", "scores", "normalize", "context", "matrix")


def prepare(values: torch.Tensor, weights: str = "rand", d_out: int = 2, **unknown: Any) -> dict[str, Any]:
    """Validate the lesson's options and build its weights."""
    from tracer.record import weights as w

    if unknown:
        raise InputError(Message("lessons.takes_no_option", name=repr("trainable"), unknown=", ".join(sorted(unknown))))
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
    backward_pass: Backward | None = None,
) -> Trace:
    """Run the lesson on validated inputs and weights (with ``backward_pass``, its gradients too)."""
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
            bound=agree.softmax(alpha, scaled, 0.0),
        )
    with rec.stage("context"):
        z = context(rec, "z", alpha, v, ())
    core = (q, k, v, omega, root, scaled, alpha)
    with rec.stage("matrix"):
        matrix_form(rec, x, w, core, z)
    info = {"lesson": "trainable", "tokens": tokens, "query": query, "stages": list(STAGES), "weights": weights_meta}
    if backward_pass is not None:
        info["backward"] = backward.record(rec, x, w, core, z, backward_pass)
    return rec.trace({**meta, **info})


def matrix_form(
    rec: Recorder, x: Var, w: dict[str, Var], core: tuple[Var, Var, Var, Var, Var, Var, Var], z: Var
) -> None:
    """The same lesson as the book's matrix code, and how far each stage is from the loop form.

    ``core`` is what :func:`attention_core` returned; each check carries the
    bound the maths puts on its difference (:mod:`tracer.record.agree`).
    """
    q, k, v, omega, root, scaled, alpha = core
    names = (("q", "W_query"), ("k", "W_key"), ("v", "W_value"))
    err = {name: agree.matmul("ik,kc->ic", x, 0.0, w[wname], 0.0) for name, wname in names}
    err["omega"] = agree.matmul("ic,jc->ij", q, err["q"], k, err["k"])
    err["alpha"] = agree.softmax(alpha, scaled, agree.scaled(scaled, err["omega"], root))
    err["z"] = agree.matmul("ij,jc->ic", alpha, err["alpha"], v, err["v"])
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
            bound=err[name],
        )
