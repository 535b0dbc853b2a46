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

import itertools
from typing import Any

import numpy as np
import torch

from tracer.compare.check import align, argvalues, forwardargs, reference, student
from tracer.compare.check.forwardargs import LESSON, RANKS, Mask
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Match, Role, Seen


def choose(module: Any, spec: Spec, x: torch.Tensor, found: dict[str, Role], given: dict[str, str]) -> Mask:
    """How to pass ``module`` its further arguments where callers differ: the mask's form and shape, and the form
    of each rotary table, under which its output is the lesson's (or nearest it).

    ``given`` is what ``forward`` is passed beyond the tokens
    (:func:`.forwardargs.bind`).  The candidates (:func:`candidates`) are
    tried in order; the first under which the output is the lesson's wins;
    when none is, the nearest of all (ties to the earlier: the lesson's
    shape, then the additive form).  A mask parameter with a default (a mask
    the code leaves to its caller) is left at its default when the output is
    the lesson's so; otherwise it is tried as a required one is (so a
    mistake is diagnosed under the mask a caller passes, and a layer that
    ignores it is still ``mask_missing``).
    """
    optional = tuple(forwardargs.optional_masks(module))
    required = "mask" in given.values()
    tables = [(name, forms) for name, k in given.items() if (forms := forwardargs.alternatives(k))]
    if not required and not optional and not tables:
        return LESSON  # nothing to choose: the tokens' layout is tried after the first run (:func:`relaid`)
    want = _lesson_output(spec, found)
    if want is None:
        return LESSON
    ref, axes = want
    if not required and not optional:
        masks = [[Mask()]]
    else:
        masks = candidates(spec, optional)
        if not required and _agrees(_output(module, spec, x, Mask(tables=_first(tables))), ref, axes):
            return Mask(tables=_first(tables))  # it masks by itself: its caller passes nothing
    ran: list[tuple[Mask, tuple[int, float]]] = []
    for tier in masks:
        for m in tier:
            for chosen in itertools.product(*(((n, f) for f in fs) for n, fs in tables)):
                tried = m._replace(tables=tuple(chosen))
                near = _near(_output(module, spec, x, tried), ref, axes)
                if near is None:
                    continue
                k = align.distance(near, ref)
                if k[0] == 0:
                    return tried
                ran.append((tried, k))
    weights = _lesson_output(spec, found, "weights")
    for tried, _ in ran:  # more or less than the lesson after the mask (a projection): the lesson's weights inside
        if weights is not None and _inside(module, spec, x, tried, *weights):
            return tried
    nearest = min(ran, key=lambda mk: mk[1], default=(LESSON, (0, 0.0)))[0]  # a shape that scrambles it: far
    return layout(module, spec, x, found, nearest, agrees=False)


def layout(
    module: Any, spec: Spec, x: torch.Tensor, found: dict[str, Role], chosen: Mask, agrees: bool | None = None
) -> Mask:
    """``chosen``, with the tokens sequence first when only so the module's output is the lesson's.

    Most attention code takes its tokens batch first, ``(b, T, d)``; some
    keeps the sequence first, ``(T, b, d)`` (labml's layers, scores
    ``einsum('ibhd,jbhd->ijbh')``; ``nn.MultiheadAttention`` without
    ``batch_first``), as its own callers pass them.  Given ``(b, T, d)`` such
    code attends over the batch.  So when the module, called as ``chosen``
    says (``agrees``: already known), does not give the lesson's output, it
    is called once more with the tokens sequence first, its result read back
    batch first; that layout is kept when it gives the lesson's output.  A
    module wrong either way keeps the batch-first call, under which it is
    diagnosed.  Tokens without a batch (``(T, d)``) have one layout.
    """
    if x.ndim != 3:
        return chosen
    want = _lesson_output(spec, found)
    if want is None:
        return chosen
    ref, axes = want
    if agrees is None:
        agrees = _agrees(_output(module, spec, x, chosen), ref, axes)
    if agrees:
        return chosen
    flipped = chosen._replace(seq_first=True)
    if _agrees(_output(module, spec, x, flipped), ref, axes):
        return flipped
    return flipped if _fitting(module, spec, x, found, flipped) > _fitting(module, spec, x, found, chosen) else chosen


def relaid(module: Any, spec: Spec, x: torch.Tensor, found: dict[str, Role], chosen: Mask, out: np.ndarray) -> Mask:
    """``chosen``, or the tokens sequence first (:func:`layout`) when the run that gave ``out`` is not the lesson's.

    A module whose call has nothing to choose is run once as the lesson
    calls it; only when that run's output ``out`` is not the lesson's is the
    other layout tried, so code that takes its tokens batch first costs no
    call more.
    """
    want = _lesson_output(spec, found)
    if want is None or x.ndim != 3 or chosen.seq_first or _agrees(out, *want):
        return chosen
    return layout(module, spec, x, found, chosen, agrees=False)


def _fitting(module: Any, spec: Spec, x: torch.Tensor, found: dict[str, Role], mask: Mask) -> int:
    """How many of the lesson's score tables (scores, masked, weights) some tensor of the run is shaped for.

    Code wrong either way still lays its axes out one way: called in the
    other layout it attends over the batch, and none of its scores or
    weights has the shape of the lesson's ``(b, heads, T, T)`` in any order.
    The layout whose tensors fit more of the lesson's score tables (the
    quantities with a query and a key axis: projections fit either way) is
    the code's, and its mistake is diagnosed there; a tie keeps batch first.
    """
    run = student.run(module, x, spec.seed, forwardargs.bind(module, spec, mask=mask)[0])
    if run.error is not None:
        return -1
    try:
        trace = reference.reference(spec, found)
    except Exception:  # weights that do not fit, or a process the student's code has tampered with: no evidence
        return 0
    steps = {q.step for q in spec.quantities if q.run == "eval"}
    nodes = [n for n in (trace.node(step) for step in steps) if {"i", "j"} <= set(n.axes)]  # scores and weights
    return sum(
        any(next(align.readings(np.asarray(n.value), n.axes, s), None) is not None for s in run.seen) for n in nodes
    )


def _inside(module: Any, spec: Spec, x: torch.Tensor, mask: Mask, ref: np.ndarray, axes: tuple[str, ...]) -> bool:
    """True when, called as ``mask`` says, the module makes the lesson's output ``ref`` on its way (captured)."""
    run = student.run(module, x, spec.seed, forwardargs.bind(module, spec, mask=mask)[0])
    return run.error is None and align.find(ref, axes, run.seen) is not None


def _first(tables: list[tuple[str, tuple[str, ...]]]) -> tuple[tuple[str, str], ...]:
    return tuple((n, fs[0]) for n, fs in tables)


def candidates(spec: Spec, optional: tuple[str, ...] = ()) -> list[list[Mask]]:
    """The masks tried, shape by shape: the lesson's shape first, then the other ranks, then with the batch.

    Each shape in every form of :data:`.forwardargs.MASKS` that fits the
    lesson: the causal ones, and for a lesson with a window the band ones
    after them (a windowed model's caller builds the band into the mask).
    """
    lesson = 4 if spec.multi else 2
    ranks = (0, *(r for r in RANKS if r != lesson))
    shapes = [(r, False) for r in ranks] + [(r, True) for r in ranks if (r or lesson) > 2]
    forms = [f for f in argvalues.MASKS if spec.windowed or not f.endswith("_band")]
    return [[Mask(form, rank, optional, batched) for form in forms] for rank, batched in shapes]


def _agrees(out: np.ndarray | None, ref: np.ndarray, axes: tuple[str, ...]) -> bool:
    """True when ``out`` is the lesson's output ``ref`` within the check's tolerance."""
    near = _near(out, ref, axes)
    return near is not None and align.distance(near, ref)[0] == 0


def _near(out: np.ndarray | None, ref: np.ndarray, axes: tuple[str, ...]) -> Match | None:
    """The reading of ``out`` nearest the lesson's output ``ref`` (None: no output, or none of its shape)."""
    return None if out is None else align.nearest(ref, axes, [Seen("output", "return", out, "")])


def _lesson_output(spec: Spec, found: dict[str, Role], stage: str = "") -> tuple[np.ndarray, tuple[str, ...]] | None:
    """The lesson's output (its last quantity of the main run) from the module's weights, and its axes;
    with ``stage``, its first quantity of that stage (``weights``: the attention weights the mask shapes)."""
    main = [q for q in spec.quantities if q.run == "eval" and (not stage or q.stage == stage)]
    if not main:
        return None
    last = main[0] if stage else main[-1]
    try:
        node = reference.reference(spec, found).node(last.step)
    except Exception:  # weights that do not fit (the judge says so), or a tampered process: no choice made here
        return None
    return np.asarray(node.value, dtype=np.float64), node.axes


def _output(module: Any, spec: Spec, x: torch.Tensor, mask: Mask) -> np.ndarray | None:
    """The module's output on ``x`` given the mask as ``mask`` says (None: it raised, or returned no float tensor)."""
    arguments = forwardargs.bind(module, spec, mask=mask)[0]  # the lesson's sizes, its heads and window
    run = student.call(module, x, spec.seed, arguments)
    out = student.returned(run.output)
    if run.error is not None or not isinstance(out, torch.Tensor) or not out.is_floating_point():
        return None
    return out.detach().to(torch.float64).cpu().numpy().copy()
