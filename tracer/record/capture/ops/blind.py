"""Queries that a mask left with no key at all, and the weights torch gives them.

A mask can hide every key from a query: a boolean ``attn_mask`` given the
wrong way round (``torch.triu(torch.ones(T, T), diagonal=1).bool()``, where
SDPA reads ``True`` as "may attend") hides the whole last row.  The softmax
of a row of ``-inf`` is ``0/0``; torch's SDPA kernels give such a query
weights of 0, so its output row is 0.  The capture recomputes what torch
did, not what the formula would say: where torch's output row is finite,

- ``N.blind`` is 1 for a query whose largest masked score is ``-inf``
  (it compares ``N.weights.max`` with the constant ``N.blind.c`` = −inf),
- ``N.weights.safe`` is the stable softmax's quotients with those rows set
  to 0 (a ``masked_fill`` by ``N.blind``),

and the weights that multiply the values are ``N.weights.safe``.  Both are
ordinary elementwise steps, so ``verify`` recomputes them; a report shows
the row that saw nothing, and the mask that hid it, instead of a false
alarm.
"""

from __future__ import annotations

import numpy as np
import torch

from tracer.record.capture import axes as ax
from tracer.record.capture.session import Session
from tracer.record.recorder import Var


def blind(s: Session, name: str, weights: Var, out: torch.Tensor, over: str) -> Var:
    """``weights`` (the stable softmax ``N.weights.quot`` along ``over``) as torch used them: rows with no key, 0.

    Returns ``weights`` itself when every query keeps a key, or when torch's
    output is not finite where one has none (a kernel that gives NaN there:
    then the NaN row is what the code computed, and is recorded as such).
    """
    m = s.rec.var(f"{name}.weights.max")
    rest = m.axes
    none = np.isneginf(m.data.numpy())
    if not none.any() or not bool(torch.isfinite(out[torch.from_numpy(none)]).all()):
        return weights
    c = s.rec.apply("const", f"{name}.blind.c", torch.tensor(float("-inf"), dtype=m.data.dtype), [], (), text="−inf")
    flag = s.rec.apply(
        "compare",
        f"{name}.blind",
        torch.from_numpy(none).to(m.data.dtype),
        [m.all.ref, c.all.ref],
        rest,
        symbol="N",
        text=f"1 if {ax.ref_text(m.name, rest)} = −inf (every key hidden) else 0",
        attrs={"sign": "=="},
    )
    names = weights.axes
    return s.rec.elementwise(
        "masked_fill",
        f"{name}.weights.safe",
        [weights(*names), flag(*rest)],
        names,
        symbol=r"\alpha",
        latex=r"\alpha = 0 \text{ where no key is left}",
        text=f"0 if {ax.ref_text(flag.name, rest)} else {ax.ref_text(weights.name, names)}",
        fill=0.0,
    )
