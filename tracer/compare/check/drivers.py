"""The few ways the check runs a student's code, each with how its runs are read (one :class:`Driver` per way).

A lesson's check description names its ``driver`` (:mod:`.lessons`):

* ``function`` and ``module`` (:mod:`.called`): called once per run (eval,
  training mode, a shorter sequence) under capture, so every tensor the
  code made is aligned with the lesson's quantities;
* ``qkv`` (:mod:`.flashcheck`): a function of queries, keys and values
  called at several sizes, its results alone compared;
* ``generation`` (:mod:`.generation`): a module driven token by token, its
  cache carried between calls, every call's rows compared;
* ``grad`` (:mod:`.gradcheck`, ``check --backward``): a hand-written backward
  pass called on the lesson's Q, K, V and upstream gradients, its dQ, dK, dV
  compared with the lesson's traced backward.

The judge (:func:`.run.judge`) is one loop over any of them: the driver
turns the evidence into a :class:`~.context.Context` (the lesson's trace and
the runs), compares each quantity in its run, settles the statuses, and
shows a divergence; the catalogue it names is what is tried to explain it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tracer.compare.check import called, catalogue, flashcheck, generation, gradcheck, gradmistakes, lessons
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.evidence import Evidence
from tracer.compare.check.model import Divergence, Quantity, StageResult


def _nothing(ctx: Context, stages: list[StageResult]) -> None:
    """No status to settle: each quantity is a result, compared as it is."""


def _none(ctx: Context, stages: list[StageResult]) -> list[str]:
    return []


def _own(spec: lessons.Spec) -> tuple[Quantity, ...]:
    return spec.quantities


@dataclass(frozen=True)
class Driver:
    """How one way of running a student's code is read back (the parent's half of a check)."""

    context: Callable[[Evidence, lessons.Spec, str | None], Context]
    """The evidence as the hypotheses see it: the lesson's trace, the runs by name, the weights."""
    compare: Callable[[Context, Quantity], StageResult]
    """One quantity in its run: matched, or differing with the nearest tensor."""
    divergence: Callable[[Context, StageResult, Hit | None, list[StageResult]], Divergence]
    """Where the first differing stage differs, and what the student's code held there."""
    catalogue: Callable[[lessons.Spec], tuple[Entry, ...]]
    """The mistakes tried, in order (the engine's look inside a run; results alone need the lesson's own)."""
    quantities: Callable[[lessons.Spec], tuple[Quantity, ...]] = _own
    mark: Callable[[Context, list[StageResult]], None] = _nothing
    notes: Callable[[Context, list[StageResult]], list[str]] = _none


CALLED = Driver(
    called.context, called.compare, called.divergence, catalogue.entries, mark=called.mark, notes=called.notes
)
SIZED = Driver(flashcheck.context, flashcheck.compare, flashcheck.divergence, catalogue.own)
GENERATED = Driver(
    generation.context, generation.compare, generation.divergence, catalogue.own, quantities=generation.quantities
)


def _backward(spec: lessons.Spec) -> tuple[Entry, ...]:
    return gradmistakes.MISTAKES


GRADED = Driver(gradcheck.context, gradcheck.compare, gradcheck.divergence, _backward, notes=gradcheck.notes)

DRIVERS = {
    lessons.FUNCTION: CALLED,
    lessons.MODULE: CALLED,
    lessons.QKV: SIZED,
    lessons.GENERATION: GENERATED,
    lessons.GRAD: GRADED,
}
"""Driver name (a lesson's ``driver``) -> how its runs are read."""
