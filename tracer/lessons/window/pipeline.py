"""Lesson ``window``: sliding-window causal attention, the mask of Mistral and of the local layers of Gemma.

A query may look at itself and at the ``w - 1`` tokens right before it: key
j is seen by query i when ``i - w < j <= i``.  The mask that hides the rest
is the sum of two parts that never overlap: the causal part ``mask.future``
(j > i, the tokens after the query) and the window part ``mask.far``
(j <= i - w, the tokens too far back).  Everything else is the causal
lesson's: the same ``nn.Linear`` weights (``torch.manual_seed(789)``), the
scores filled with -inf where hidden, scaled by sqrt(d_k), a stable softmax,
the context vectors.

Stage ``causal`` computes the causal lesson's weights from the same scores
(only ``mask.future`` applied) and subtracts: rows ``i <= w`` are exactly 0,
since there the window reaches back to the first token; with ``w >= T``
every row is, and the lesson is the causal lesson bit for bit.
Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

import torch

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.lessons.window import backward
from tracer.message import Message
from tracer.record import weights as wts
from tracer.record.blocks.attention import context, scores
from tracer.record.blocks.backward import Backward
from tracer.record.blocks.masks import masked_softmax
from tracer.record.blocks.projections import inputs_and_weights, projections, sqrt_dk
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "projections", "scores", "mask", "normalize", "context", "causal")
WINDOW = 3
"""The default width w: on the tutorial's six tokens queries 4 to 6 lose their first keys."""
WEIGHTS = r"\alpha^{\mathrm{win}}"
"""The letter of the sliding-window weights."""


def prepare(values: torch.Tensor, window: int = WINDOW, d_out: int = 2, **unknown: Any) -> dict[str, Any]:
    """The causal lesson's ``nn.Linear`` weights (seed 789) and a validated window width."""
    if unknown:
        raise InputError(Message("lessons.takes_no_option", name=repr("window"), unknown=", ".join(sorted(unknown))))
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InputError(Message("options.must_whole_number_keys", block=repr(window)), arg="window")
    weights, info = wts.choose("linear", int(values.shape[1]), d_out, int(values.shape[0]))
    return {"weights": weights, "weights_meta": info, "window": window}


def focus(tokens: int, prepared: dict[str, Any]) -> int:
    """The focus rule: the last query, which of all rows has the most keys outside its window."""
    return tokens


def masks(t: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The two parts of the hidden entries: ``future`` (j > i) and ``far`` (j <= i - w), as 0/1 tensors."""
    i = torch.arange(t).unsqueeze(1)
    j = torch.arange(t).unsqueeze(0)
    return (j > i).to(torch.float64), (j <= i - w).to(torch.float64)


def window_mask(rec: Recorder, t: int, w: int) -> tuple[Var, Var]:
    """Record the causal part, the window part and their sum, the entries the window hides."""
    future, far = masks(t, w)
    fut = rec.input("mask.future", future, "ij", symbol=r"U_{<i,j>}", text="1 if <j> > <i> else 0")
    back = rec.input("mask.far", far, "ij", symbol=r"F_{<i,j>}", text=f"1 if <j> ≤ <i> − {w} else 0")
    hide = rec.elementwise(
        "add",
        "mask.hide",
        [fut("i", "j"), back("i", "j")],
        "ij",
        symbol=r"H_{<i,j>}",
        latex=r"H_{<i,j>} = U_{<i,j>} + F_{<i,j>}",
        text="mask.future[<i>,<j>] + mask.far[<i>,<j>]",
    )
    return fut, hide


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    weights: dict[str, torch.Tensor],
    weights_meta: dict[str, Any],
    window: int,
    backward_pass: Backward | None = None,
) -> Trace:
    """Run the lesson (with ``backward_pass``, the gradients of its context vectors too)."""
    rec = Recorder(dtype)
    t = int(inputs.shape[0])
    x, w = inputs_and_weights(rec, inputs, weights)
    q, k, v = projections(rec, x, w)
    with rec.stage("scores"):
        omega = scores(rec, "omega", q, k, (), r"\omega_{<i,j>}")
        root = sqrt_dk(rec, k)
    with rec.stage("mask"):
        future, hide = window_mask(rec, t, window)
    with rec.stage("normalize"):
        rule = (rf"<i> - {window} < <j> \le <i>", r"\text{otherwise}", ("<j> > <i>", f"<j> ≤ <i> − {window}"))
        alpha = masked_softmax(rec, omega, hide, root, weights=WEIGHTS, soft="window", rule=rule)
    with rec.stage("context"):
        z = context(rec, "z", alpha, v, ())
    with rec.stage("causal"):
        causal = masked_softmax(rec, omega, future, root, "causal.", r"\alpha^{\mathrm{causal}}", soft="causal")
        rec.elementwise(
            "sub",
            "diff.alpha",
            [alpha("i", "j"), causal("i", "j")],
            "ij",
            symbol=rf"{WEIGHTS}_{{<i,j>}} - \alpha^{{\mathrm{{causal}}}}_{{<i,j>}}",
            latex=rf"{WEIGHTS}_{{<i,j>}} - \alpha^{{\mathrm{{causal}}}}_{{<i,j>}}",
            text="window.alpha[<i>,<j>] − causal.alpha[<i>,<j>]",
        )
        zc = context(rec, "causal.z", causal, v, ())
        rec.maxabsdiff(
            "check.causal",
            z,
            zc,
            latex=r"\max \lvert z^{\mathrm{win}} - z^{\mathrm{causal}} \rvert",
            text="max |z − causal.z|",
        )
    info = {"lesson": "window", "tokens": tokens, "query": query, "stages": list(STAGES), "window": window}
    if backward_pass is not None:
        info["backward"] = backward.record(rec, x, w, (q, k, v), root, hide, alpha, z, backward_pass)
    return rec.trace({**meta, **info, "weights": weights_meta})
