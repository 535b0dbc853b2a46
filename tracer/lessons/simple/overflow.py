"""Stage ``overflow`` of lesson ``simple``: the inputs scaled until the naive softmax breaks.

The factor ``c`` comes from :func:`tracer.core.overflow.factor` (the focus
query's largest score pushed past ``ln(max)`` of the dtype).  The stage
records ``scaled.c``, the scaled inputs ``scaled.x = c · x`` (one correctly
rounded product each), their scores ``scaled.omega`` product by product, the
naive softmax (``scaled.naive.*``) and the stable one (``scaled.stable.*``,
``scaled.alpha``), for every query, so that a report shows the overflow from
the trace alone.  ``meta["overflow"]`` says what was recorded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tracer.core import overflow
from tracer.record.blocks.attention import row_sum, stable_softmax, weights_sum
from tracer.record.recorder import Recorder, Var

OMEGA = r"\tilde{\omega}_{<i,j>}"
"""The symbol of a scaled score."""


def record(rec: Recorder, x: Var, omega: Var, query: int, dtype: str) -> dict[str, Any]:
    """Record the stage (when some power of ten makes exp overflow) and return ``meta["overflow"]``."""
    top = float(np.max(omega.data[query - 1].numpy().astype(np.float64)))
    c = overflow.factor(top, dtype)
    meta: dict[str, Any] = {"factor": c, "max_power": overflow.MAX_POWER}
    if c is None or not bool(torch.isfinite(x.data * c).all()):  # the scaled inputs must still fit the dtype
        meta["factor"] = None
        return meta
    with rec.stage("overflow"):
        cv = rec.constant("scaled.c", float(c), symbol="c", text=f"{c}")
        sx = rec.elementwise(
            "mul",
            "scaled.x",
            [x("i", "k"), cv()],
            "ik",
            symbol=r"\tilde{x}^{(<i>)}_{<k>}",
            latex=r"\tilde{x}^{(<i>)}_{<k>} = c\, x^{(<i>)}_{<k>}",
            text="scaled.c × x[<i>,<k>]",
        )
        s_omega = rec.contract(
            "scaled.omega",
            sx("i", "k"),
            sx("j", "k"),
            "ijk",
            "k",
            symbol=OMEGA,
            latex=OMEGA + r" = \tilde{x}^{(<i>)} \cdot \tilde{x}^{(<j>)}",
            text="scaled.x(<i>)·scaled.x(<j>)",
            part_latex=(
                r"\tilde{x}^{(<i>)}_{<k>}\, \tilde{x}^{(<j>)}_{<k>}",
                r"\sum_{m=1}^{<k>} \tilde{x}^{(<i>)}_{m}\, \tilde{x}^{(<j>)}_{m}",
            ),
            part_text=("scaled.x[<i>,<k>] × scaled.x[<j>,<k>]", "Σ_{m≤<k>} scaled.x[<i>,m] × scaled.x[<j>,m]"),
        )
        n_exp = rec.elementwise(
            "exp",
            "scaled.naive.exp",
            [s_omega("i", "j")],
            "ij",
            symbol=rf"e^{{{OMEGA}}}",
            latex=rf"e^{{{OMEGA}}}",
            text="exp(scaled.omega[<i>,<j>])",
        )
        n_sum = row_sum(rec, "scaled.naive.sum", n_exp, r"\tilde{E}_{<i>}", r"e^{\tilde{\omega}_{<i,j>}}")
        n_alpha = rec.elementwise(
            "div",
            "scaled.naive.alpha",
            [n_exp("i", "j"), n_sum("i")],
            "ij",
            symbol=r"\tilde{\alpha}^{\mathrm{naive}}_{<i,j>}",
            latex=(
                r"\tilde{\alpha}^{\mathrm{naive}}_{<i,j>} = "
                r"\frac{e^{\tilde{\omega}_{<i,j>}}}{\sum_{j'} e^{\tilde{\omega}_{<i>j'}}}"
            ),
            text="scaled.naive.exp[<i>,<j>] / scaled.naive.sum[<i>]",
        )
        weights_sum(rec, n_alpha, r"\tilde{\alpha}^{\mathrm{naive}}")
        stable_softmax(
            rec,
            s_omega,
            OMEGA,
            out="scaled.alpha",
            prefix="scaled.stable",
            total=r"\tilde{E}'",
            weights=r"\tilde{\alpha}",
            top=r"\tilde{m}",
        )
    return meta
