"""Check a student's attention code against a lesson: run it, align its values, find the first divergence, diagnose."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from tracer.compare.check import deadline, forwardargs, lessons, resizeref, sizing, student
from tracer.compare.check.catalogue import diagnose
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.drivers import DRIVERS
from tracer.compare.check.entry import Entry
from tracer.compare.check.evidence import Evidence
from tracer.compare.check.gather import gather
from tracer.compare.check.model import StageResult
from tracer.compare.check.result import CheckResult
from tracer.compare.check.structure import STRUCTURE
from tracer.compare.check.student import name_of
from tracer.core.trace import Trace
from tracer.errors import InputError, unknown
from tracer.message import Message


def check(
    obj: Any,
    lesson: str = "simple",
    source: str | None = None,
    timeout: float | None = None,
    d_out: int | None = None,
    d_in: int | None = None,
    heads: int | None = None,
    rope_style: object = None,  # "half" or "interleaved"; checked by spec_for (sizes reach here as **dict[str, int])
    backward: bool = False,
) -> CheckResult:
    """Check ``obj`` (a function for lessons ``simple`` and ``flash``, a module or a factory of one otherwise).

    ``source`` is the student's file, used to name what was checked and the
    line where a crash happened (default: the file ``obj`` was defined in).
    ``timeout`` limits the whole check, in seconds (default
    :data:`deadline.SECONDS`; 0: no limit): an endless loop in the student's
    code ends it with an :class:`~tracer.errors.InputError`.
    ``d_out`` builds the module with another output width than the lesson's
    (not for lesson ``simple``; for ``multihead`` a multiple of its two heads),
    ``d_in`` for embeddings of another width (:func:`reference.embeddings`),
    ``heads`` the number of heads (lessons ``multihead`` and ``gqa``).
    ``rope_style`` (lesson ``rope``): the pairing the code should use,
    ``half`` (``rotate_half``, the default) or ``interleaved``.
    ``backward=True`` checks a hand-written backward pass instead
    (``f(Q, K, V, dO) -> (dQ, dK, dV)`` or an ``autograd.Function``) against
    the lesson's traced backward (:mod:`.gradcheck`).
    A module that maps ``d`` to ``d`` (one width parameter such as
    ``embed_dim``, or weights that only fit that way) is checked with
    ``d_in = d_out`` (note ``square``).
    """
    spec = spec_for(lesson, d_out, d_in, heads, rope_style, backward)
    source = source or student.source_of(obj)
    with deadline.limit(
        deadline.SECONDS if timeout is None else timeout, Message("trouble.check_of", name=name_of(obj))
    ):
        ev = gather(obj, spec)
    return judge(ev, spec, source)


def spec_for(
    lesson: str,
    d_out: int | None = None,
    d_in: int | None = None,
    heads: int | None = None,
    rope_style: object = None,
    backward: bool = False,
) -> lessons.Spec:
    """Lesson ``lesson`` with the sizes asked for (an :class:`~tracer.errors.InputError` names a wrong one).

    ``backward``: the lesson as ``check --backward`` sees it (:func:`.gradcheck.backward_spec`), at its own sizes.
    """
    if lesson not in lessons.SPECS:
        raise InputError(unknown("lesson", lesson, lessons.SPECS))
    spec = lessons.SPECS[lesson]
    if backward:
        from tracer.compare.check.gradcheck import backward_spec

        if d_out is not None or d_in is not None or heads is not None or rope_style is not None:
            raise InputError(Message("trouble.grad_sizes"))
        return backward_spec(spec)
    if rope_style is not None:
        if not spec.rotary or rope_style not in resizeref.STYLES:
            turned = ", ".join(n for n, s in lessons.SPECS.items() if s.rotary)
            raise InputError(f"rope_style is half or interleaved, for lesson {turned} only (got {rope_style!r})")
        spec = replace(spec, style=str(rope_style))
    if spec.driver == lessons.QKV and (d_out is not None or d_in is not None or heads is not None):
        said = "--d-out, --d-in and --heads do not apply"
        raise InputError(f"lesson {spec.name} checks a function of q, k and v: {said}")
    if d_out is not None or d_in is not None or heads is not None:
        spec = sizing.sized(spec, d_out, d_in, heads)
    return spec


def judge(ev: Evidence, spec: lessons.Spec, source: str | None) -> CheckResult:
    """The verdict on a student's runs (:func:`.gather.gather`), computed from data alone.

    One loop for every way a lesson runs code (:mod:`.drivers`): the runs
    become a context (the lesson's reference, computed here on its own
    inputs with the weights the evidence names, and the runs by name); each
    quantity is compared in its run; the first divergence is found; the
    first hypothesis the evidence bears out names the mistake, and when
    every stage matches, the differences of structure are tried
    (:mod:`.structure`).  ``spec`` is the lesson as the teacher sized it;
    the evidence says how the module was built (:func:`shaped`).  Data that
    does not fit the lesson raises :class:`~.evidence.Malformed`.
    """
    label = f"{Path(source).name}:{ev.name}" if source else ev.name
    driver = DRIVERS[spec.driver]
    spec = shaped(ev, spec)
    if ev.structural is None:
        ctx = driver.context(ev, spec, source)
        stages = [driver.compare(ctx, q) for q in driver.quantities(spec)]
        driver.mark(ctx, stages)
    else:  # another attention than the lesson's: nothing to compare, a structure hypothesis names it
        ctx, stages = Context(spec, Trace([], {"lesson": spec.name}), [], {}, structure=ev.structural), []
    chosen, hit = _first(ctx, stages, driver.catalogue(spec))
    if chosen is None:
        hit = diagnose(ctx, ["structure"], STRUCTURE)
    elif hit is None:
        _unexplained(ctx, chosen)
    divergence = driver.divergence(ctx, chosen, hit, stages) if chosen is not None else None
    for s in stages[stages.index(chosen) + 1 :] if chosen is not None else []:
        if s.status == "differs":
            s.status = "consequence"
    notes = ["square"] * ev.square + forwardargs.notes(ev.given) + ["returned_tuple"] * bool(ev.returned)
    notes += driver.notes(ctx, stages)
    return CheckResult(
        spec.name, stages, divergence, hit, list(ev.roles.values()), ctx.trace, notes, label, ctx.captured,
        ev.built, spec.heads if spec.multi else 0, dict(ev.given), spec.driver == lessons.GRAD, dict(ctx.traces),
    )  # fmt: skip


def shaped(ev: Evidence, spec: lessons.Spec) -> lessons.Spec:
    """The lesson as the module was built: with its own biases, square (``d_in = d_out``), or as a wrapper of heads."""
    if ev.bias:  # the projections' biases are the module's own: the reference adds them
        spec = replace(spec, bias=True)
    spec = sizing.squared(spec, ev.square)
    if ev.wrap and spec.multi:
        spec = sizing.wrapped(spec, ev.wrap, "W_out" in ev.roles)
    return spec


def _unexplained(ctx: Context, chosen: StageResult) -> None:
    """A crash that no hypothesis explains is trouble, as any crash of the student's code: raised again here."""
    run = ctx.runs.get(chosen.quantity.run)
    if run is not None and run.error is not None:
        crash = run.error
        raise student.StudentError(crash.message, crash.details, crash.cause)


def _first(ctx: Context, stages: list[StageResult], tried: tuple[Entry, ...]) -> tuple[StageResult | None, Hit | None]:
    """The first divergence and its diagnosis.

    The first unmatched quantity opens a run of unmatched quantities of its
    group (alternatives such as masking before or after scaling); the first
    entry of ``tried`` that applies to one of their stages and is borne out
    names the mistake, and the divergence is the run's quantity at the stage
    where that mistake first shows.
    """
    bad = [s for s in stages if s.status == "differs"]
    if not bad:
        return None, None
    head = bad[0]
    group = [head]
    if head.quantity.group:
        for s in stages[stages.index(head) + 1 :]:
            if s.quantity.group != head.quantity.group:
                break
            if s.status == "differs":
                group.append(s)
    hit = diagnose(ctx, [s.quantity.stage for s in group], tried)
    if hit is None:
        return head, None
    entry = next(e for e in tried if e.code == hit.code)
    for stage in entry.stages:
        for s in group:
            if s.quantity.stage == stage:
                return s, hit
    return head, hit
