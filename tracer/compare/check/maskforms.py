"""The form in which a student's ``forward`` reads the causal mask it requires: tried, not guessed from its name.

A mask parameter (``mask``, ``attn_mask`` …) carries the same causal mask
in three forms in published code, and correct code reads exactly one:

- ``mask``, additive float, 0 where a token may attend and −inf above the
  diagonal: ``scores + mask`` (Meta's Llama), the float ``attn_mask`` of
  ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``, Hugging
  Face's prepared 4-d mask;
- ``mask_keep``, boolean, True where a token may attend:
  ``scores.masked_fill(mask == 0, -1e9)`` with the Annotated Transformer's
  ``subsequent_mask``, ``torch.where(mask, scores, -inf)``;
- ``mask_hide``, boolean, True where a token is hidden:
  ``scores.masked_fill(mask, -inf)``, torch's boolean ``attn_mask`` of
  ``nn.MultiheadAttention``.

The name does not tell them apart (``mask`` is all three), so the module is
called once per form, in that order, on the lesson's input in eval mode,
outside any capture, and its output compared with the lesson's output
computed from its own weights.  The first form under which they agree is
the one passed to every run of the check.  When none agrees the code has a
mistake whatever its caller; the check then passes the form whose output
came nearest the lesson's (fewest entries out of tolerance, then the
smallest largest difference; ties to the earlier form, so a module that
ignores its mask, whose three outputs are one, gets the additive form as
before), or the additive form when no form ran, so that the crash is
reported as it always was.

Why trying cannot make a wrong module pass.  Every form tried is the
lesson's causal mask exactly, in a convention a careful caller uses; no
other mask (a shifted diagonal, a transposed one, a keep mask as floats to
be added) is ever passed.  A form is chosen for a match only when, given a
correct causal mask in that convention, the module returns the lesson's
output: it is then correct code for that caller, which is what the check
asks of the code.  Choosing changes only what the module is handed, never
what it is compared with: every stage of the captured run, the run in
training mode, the shorter run and the second build are then compared with
the lesson as always, so a mistake before or after the mask still shows.
A module wrong for every caller (one that ignores the mask, zeroes the
weights after the softmax with ``masked_fill(mask == 0, 0)``, inverts the
mask it reads, or applies it in two readings at once) matches under no
form and is diagnosed under the nearest, as the tests show.  The notes and
the JSON's ``given`` say which form was passed (``mask``, ``mask_keep``,
``mask_hide``).

Cost: two or three calls more, only for a ``forward`` that requires a mask.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tracer.compare.check import align, forwardargs, reference, student
from tracer.compare.check.forwardargs import LESSON, RANKS, Mask
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Match, Role, Seen


def choose(module: Any, spec: Spec, x: torch.Tensor, found: dict[str, Role], given: dict[str, str]) -> Mask:
    """How to pass ``module`` its mask: the form and shape under which its output is the lesson's (or nearest it).

    ``given`` is what ``forward`` is passed beyond the tokens
    (:func:`.forwardargs.bind`).  A required mask is tried in each form of
    :data:`.forwardargs.MASKS` in the lesson's shape, then in the other
    shapes of :data:`.forwardargs.RANKS`; the first under which the output
    is the lesson's wins; when none is, the nearest of all (ties to the
    earlier: the lesson's shape, then the additive form).  A mask
    parameter with a default (a mask the code leaves to its caller) is left
    at its default when the output is the lesson's so; otherwise it is
    tried as a required one is (so a mistake is diagnosed under the mask a
    caller passes, and a layer that ignores it is still ``mask_missing``).
    """
    optional = tuple(forwardargs.optional_masks(module))
    required = "mask" in given.values()
    if not required and not optional:
        return LESSON
    want = _lesson_output(spec, found)
    if want is None:
        return LESSON
    ref, axes = want
    lesson = 4 if spec.multi else 2
    ranks = (0, *(r for r in RANKS if r != lesson))
    tiers: list[list[Mask]] = [[Mask(form, rank, optional) for form in forwardargs.MASKS] for rank in ranks]
    if not required and _agrees(_output(module, spec, x, LESSON), ref, axes):
        return LESSON  # it masks by itself: its caller passes nothing
    readings: list[list[tuple[Mask, tuple[int, float]]]] = []
    for tier in tiers:
        got = []
        for m in tier:
            near = _near(_output(module, spec, x, m), ref, axes)
            if near is None:
                continue
            k = align.distance(near, ref)
            if k[0] == 0:
                return m
            got.append((m, k))
        readings.append(got)
    ran = [mk for got in readings for mk in got]  # a shape that scrambles the output by accident comes out far
    return min(ran, key=lambda mk: mk[1], default=(LESSON, (0, 0.0)))[0]


def _agrees(out: np.ndarray | None, ref: np.ndarray, axes: tuple[str, ...]) -> bool:
    """True when ``out`` is the lesson's output ``ref`` within the check's tolerance."""
    near = _near(out, ref, axes)
    return near is not None and align.distance(near, ref)[0] == 0


def _near(out: np.ndarray | None, ref: np.ndarray, axes: tuple[str, ...]) -> Match | None:
    """The reading of ``out`` nearest the lesson's output ``ref`` (None: no output, or none of its shape)."""
    return None if out is None else align.nearest(ref, axes, [Seen("output", "return", out, "")])


def _lesson_output(spec: Spec, found: dict[str, Role]) -> tuple[np.ndarray, tuple[str, ...]] | None:
    """The lesson's output (its last quantity of the main run) from the module's weights, and its axes."""
    last = [q for q in spec.quantities if q.run == "eval"][-1]
    try:
        node = reference.reference(spec, found).node(last.step)
    except (ValueError, IndexError, KeyError, RuntimeError, TypeError):  # weights that do not fit: the judge says so
        return None
    return np.asarray(node.value, dtype=np.float64), node.axes


def _output(module: Any, spec: Spec, x: torch.Tensor, mask: Mask) -> np.ndarray | None:
    """The module's output on ``x`` given the mask as ``mask`` says (None: it raised, or returned no float tensor)."""
    arguments = forwardargs.bind(module, spec, mask=mask)[0]
    run = student.call(module, x, spec.seed, arguments)
    out = student.returned(run.output)
    if run.error is not None or not isinstance(out, torch.Tensor) or not out.is_floating_point():
        return None
    return out.detach().to(torch.float64).cpu().numpy().copy()
