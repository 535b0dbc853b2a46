"""``check --backward``: a hand-written backward pass of attention against the lesson's traced backward.

The subject returns the gradients of attention's queries, keys and values
(:mod:`.gradcall` calls it, in the child); this module is the parent's half,
the check's driver for a lesson asked with ``--backward`` (:mod:`.drivers`),
against the lesson's backward traces of :mod:`.gradref`.

Each returned gradient is compared with ``dq``, ``dk``, ``dv`` of the
reference in its run: first what it is (a tensor, of its input's dtype and
shape: otherwise the stage differs with a note saying what it is instead),
then its values within :mod:`.align`'s tolerance.  Where they differ, the
mistakes of :mod:`.gradmistakes` each predict every gradient of the chain;
the first whose predicted dQ, dK and dV the student's equal in every run is
the diagnosis, and the first wrong step is the first node of the lesson's
backward, in the trace's order, where that mistake's values leave the
lesson's (``domega[2,1]``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from tracer.compare.check import align, gradmistakes
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.evidence import Evidence, Malformed
from tracer.compare.check.gradref import LINES, STAGES, problem, references, returned, runs, values, with_dropout
from tracer.compare.check.lessons import GRAD, Q, Spec
from tracer.compare.check.model import Divergence, Match, Quantity, StageResult
from tracer.core.fmt import num
from tracer.core.trace import Step
from tracer.errors import InputError
from tracer.message import Message


def backward_spec(spec: Spec) -> Spec:
    """Lesson ``spec`` as ``check --backward`` sees it: its gradients compared, the backward mistakes tried."""
    if spec.gradients is None:
        from tracer.compare.check.lessons import SPECS

        known = ", ".join(n for n, s in SPECS.items() if s.gradients is not None)
        raise InputError(Message("trouble.grad_lesson", lesson=spec.name, known=known))
    steps = spec.gradients
    quantities = tuple(Q(key, STAGES[key], getattr(steps, key), run=run) for run in runs(spec) for key in STAGES)
    return replace(spec, driver=GRAD, quantities=quantities, mistakes=(), rebuilds=None, at_size=None)


def context(ev: Evidence, spec: Spec, source: str | None) -> Context:
    """The lesson's traces and the student's runs by name; a run missing or extra is malformed data."""
    got, want = sorted(r.name for r in ev.runs if r.name != LINES), sorted(runs(spec))
    if got != want:
        raise Malformed(f"the gradients of the runs {want} were expected, got {got[:5]}")
    traces = references(spec, with_dropout(ev, spec))
    by_name = {r.name: r for r in ev.runs}
    made = by_name[LINES].seen if LINES in by_name else []
    return Context(spec, traces["eval"], made, {}, runs=by_name, source=source, traces=traces)


def compare(ctx: Context, q: Quantity) -> StageResult:
    """The returned gradient ``q.key`` of run ``q.run`` against the lesson's node, within tolerance."""
    note, _ = problem(ctx, q)
    if note:
        return StageResult(q, "differs", None, None, note)
    got = returned(ctx, q.run, q.key)
    assert got is not None
    want = np.asarray(ctx.traces[q.run].tensor(q.step), dtype=np.float64)
    m = Match(replace(got, where=_file(ctx)), (0, 1), 0, align.error(got.value, want))
    return StageResult(q, "match", m) if align.close(got.value, want) else StageResult(q, "differs", None, m)


def _file(ctx: Context) -> str:
    return Path(ctx.source).name if ctx.source else ""


def divergence(ctx: Context, s: StageResult, hit: Hit | None, stages: list[StageResult]) -> Divergence:
    """The first wrong step: where the diagnosed mistake first leaves the lesson's backward, else the gradient."""
    q = s.quantity
    trace = ctx.traces[q.run]
    if hit is not None:
        step, role, want, wrong = gradmistakes.first_wrong(ctx, q.run, hit.code)
        node = trace.node(step)
        idx = align.first_difference(want, wrong)
        element = Step(trace, node, tuple(int(i) for i in idx)).id
        stage, said = gradmistakes.STAGE[role], {"element": element, "value": num(float(wrong[idx]), 4)}
        made = hit.seen
        return Divergence(
            q.run, stage, role, step, element, float(want[idx]), float(wrong[idx]), made.id if made else None,
            made.where if made and made.where else _file(ctx), "grad_implied", detail=said,
        )  # fmt: skip
    note, detail = problem(ctx, q)
    want = np.asarray(trace.tensor(q.step), dtype=np.float64)
    got = values(ctx, q.run)[q.key]
    idx = align.first_difference(want, got) if got is not None else (0,) * want.ndim
    element = Step(trace, trace.node(q.step), tuple(int(i) for i in idx)).id
    student = float(got[idx]) if got is not None else None
    shown = q.key if got is not None else None
    return Divergence(
        q.run, q.stage, q.key, q.step, element, float(want[idx]), student, shown, _file(ctx), note, detail=detail
    )


def notes(ctx: Context, stages: list[StageResult]) -> list[str]:
    """``grad_dropout`` when the reference went through the lesson's dropout, ``grad_no_dropout`` when it could have."""
    g = ctx.spec.gradients
    if g is None or not g.rate:
        return []
    return ["grad_dropout" if ctx.traces["eval"].meta.get("dropout", {}).get("p") else "grad_no_dropout"]
