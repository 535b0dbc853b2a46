"""Lesson ``simple``: self-attention without trainable weights, as in the tutorial.

For inputs x(1)..x(T) (rows of a T x d tensor) the lesson computes, for every
query i and key j:

* scores: omega_ij = x(i)·x(j), product by product, running sum by running sum;
* four normalizations of each score row, side by side: divide by the sum,
  naive softmax, stable softmax (subtract the row max first) and
  ``torch.softmax``; the stable softmax gives the headline weights alpha_ij;
* context vectors z(i) = sum_j alpha_ij x(j), term by term, per component;
* the same quantities in matrix form (``X @ X.T``, ``softmax(dim=1)``,
  ``A @ X``) and how far each form is from the loop form;
* the overflow demonstration: the inputs scaled until the naive softmax's
  exp overflows, beside the stable softmax (:mod:`.overflow`).

Step ids are documented in ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

import torch

from tracer.core.trace import Trace
from tracer.lessons.simple import backward, overflow
from tracer.record import agree
from tracer.record.blocks.attention import row_sum, stable_softmax, weights_sum
from tracer.record.blocks.backward import Backward
from tracer.record.recorder import Recorder

STAGES = ("inputs", "scores", "normalize", "context", "matrix", "overflow")


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    backward_pass: Backward | None = None,
) -> Trace:
    """Run the lesson on validated inputs and return its trace (with ``backward_pass``, its gradients too)."""
    rec = Recorder(dtype)
    with rec.stage("inputs"):
        x = rec.input("x", inputs, "ik", symbol=r"x^{(<i>)}_{<k>}", text="x(<i>)_<k>")

    with rec.stage("scores"):
        omega = rec.contract(
            "omega",
            x("i", "k"),
            x("j", "k"),
            "ijk",
            "k",
            symbol=r"\omega_{<i,j>}",
            latex=r"\omega_{<i,j>} = x^{(<i>)} \cdot x^{(<j>)} = \sum_{k} x^{(<i>)}_{k}\, x^{(<j>)}_{k}",
            text="x(<i>)·x(<j>)",
            part_latex=(
                r"x^{(<i>)}_{<k>}\, x^{(<j>)}_{<k>}",
                r"\sum_{m=1}^{<k>} x^{(<i>)}_{m}\, x^{(<j>)}_{m}",
            ),
            part_text=("x(<i>)_<k> × x(<j>)_<k>", "Σ_{m≤<k>} x(<i>)_m × x(<j>)_m"),
        )

    with rec.stage("normalize"):
        # (a) divide each score by its row's sum
        div_sum = row_sum(rec, "div.sum", omega, r"S_{<i>}", r"\omega_{<i,j>}")
        div_alpha = rec.elementwise(
            "div",
            "div.alpha",
            [omega("i", "j"), div_sum("i")],
            "ij",
            symbol=r"\alpha^{\mathrm{sum}}_{<i,j>}",
            latex=r"\alpha^{\mathrm{sum}}_{<i,j>} = \frac{\omega_{<i,j>}}{\sum_{j'} \omega_{<i>j'}}",
            text="omega[<i>,<j>] / div.sum[<i>]",
        )
        weights_sum(rec, div_alpha, r"\alpha^{\mathrm{sum}}")

        # (b) naive softmax: exp, then divide by the sum of exps
        n_exp = rec.elementwise(
            "exp",
            "naive.exp",
            [omega("i", "j")],
            "ij",
            symbol=r"e^{\omega_{<i,j>}}",
            latex=r"e^{\omega_{<i,j>}}",
            text="exp(omega[<i>,<j>])",
        )
        n_sum = row_sum(rec, "naive.sum", n_exp, r"E_{<i>}", r"e^{\omega_{<i,j>}}")
        n_alpha = rec.elementwise(
            "div",
            "naive.alpha",
            [n_exp("i", "j"), n_sum("i")],
            "ij",
            symbol=r"\alpha^{\mathrm{naive}}_{<i,j>}",
            latex=r"\alpha^{\mathrm{naive}}_{<i,j>} = \frac{e^{\omega_{<i,j>}}}{\sum_{j'} e^{\omega_{<i>j'}}}",
            text="naive.exp[<i>,<j>] / naive.sum[<i>]",
        )
        weights_sum(rec, n_alpha, r"\alpha^{\mathrm{naive}}")

        # (c) stable softmax: subtract the row max first; these are the weights alpha
        alpha = stable_softmax(rec, omega, r"\omega_{<i,j>}", total="E'")

        # (d) torch.softmax, as a library call
        t_alpha = rec.softmax(
            "torch.alpha",
            omega("i", "j"),
            "j",
            symbol=r"\mathrm{softmax}(\omega_{<i>})_{<j>}",
            latex=r"\mathrm{softmax}(\omega_{<i>})_{<j>}",
            text="torch.softmax(omega[<i>])[<j>]",
        )
        weights_sum(rec, t_alpha, r"\alpha^{\mathrm{torch}}")
        rec.maxabsdiff(
            "check.naive",
            n_alpha,
            alpha,
            latex=r"\max_{i,j} \lvert \alpha^{\mathrm{naive}}_{ij} - \alpha_{ij} \rvert",
            text="max |naive.alpha − alpha|",
        )
        rec.maxabsdiff(
            "check.torch",
            t_alpha,
            alpha,
            latex=r"\max_{i,j} \lvert \alpha^{\mathrm{torch}}_{ij} - \alpha_{ij} \rvert",
            text="max |torch.alpha − alpha|",
            bound=agree.softmax(alpha, omega, 0.0),
        )

    with rec.stage("context"):
        z = rec.contract(
            "z",
            alpha("i", "j"),
            x("j", "k"),
            "ijk",
            "j",
            symbol=r"z^{(<i>)}_{<k>}",
            latex=r"z^{(<i>)}_{<k>} = \sum_{j} \alpha_{<i>j}\, x^{(j)}_{<k>}",
            text="Σ_j alpha[<i>,j] × x[j,<k>]",
            parts=("t", "s"),
            part_latex=(
                r"\alpha_{<i,j>}\, x^{(<j>)}_{<k>}",
                r"\sum_{m=1}^{<j>} \alpha_{<i>m}\, x^{(m)}_{<k>}",
            ),
            part_text=("alpha[<i>,<j>] × x[<j>,<k>]", "Σ_{m≤<j>} alpha[<i>,m] × x[m,<k>]"),
        )

    with rec.stage("matrix"):
        m_omega = rec.tensor(
            "mat.omega", "matmul", x.data @ x.data.T, [x, x], "ij", latex=r"\Omega = X X^{\top}", text="X @ X.T"
        )
        m_alpha = rec.tensor(
            "mat.alpha",
            "softmax",
            torch.softmax(m_omega.data, dim=1),
            [m_omega],
            "ij",
            latex=r"A = \mathrm{softmax}_{\text{rows}}(\Omega)",
            text="softmax(mat.omega, dim=1)",
        )
        m_z = rec.tensor(
            "mat.z", "matmul", m_alpha.data @ x.data, [m_alpha, x], "ik", latex=r"Z = A X", text="mat.alpha @ X"
        )
        e_omega = agree.matmul("ik,jk->ij", x, 0.0, x, 0.0)
        e_alpha = agree.softmax(alpha, omega, e_omega)
        rec.maxabsdiff(
            "check.omega",
            m_omega,
            omega,
            latex=r"\max_{i,j} \lvert \Omega_{ij} - \omega_{ij} \rvert",
            text="max |mat.omega − omega|",
            bound=e_omega,
        )
        rec.maxabsdiff(
            "check.alpha",
            m_alpha,
            alpha,
            latex=r"\max_{i,j} \lvert A_{ij} - \alpha_{ij} \rvert",
            text="max |mat.alpha − alpha|",
            bound=e_alpha,
        )
        rec.maxabsdiff(
            "check.z",
            m_z,
            z,
            latex=r"\max_{i,k} \lvert Z_{ik} - z^{(i)}_{k} \rvert",
            text="max |mat.z − z|",
            bound=agree.matmul("ij,jk->ik", alpha, e_alpha, x, 0.0),
        )

    scaled = overflow.record(rec, x, omega, query, str(dtype).removeprefix("torch."))
    stages = [s for s in STAGES if s != "overflow" or scaled["factor"] is not None]
    info = {"lesson": "simple", "tokens": tokens, "query": query, "stages": stages, "overflow": scaled}
    if backward_pass is not None:
        info["backward"] = backward.record(rec, x, alpha, z, backward_pass)
    return rec.trace({**meta, **info})
