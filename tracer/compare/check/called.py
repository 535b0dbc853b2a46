"""The driver of a function or a module called once per run under capture: every tensor it made is aligned.

Lessons whose ``driver`` is ``function`` or ``module`` (:mod:`.lessons`) are
called on the lesson's inputs in eval mode, and as the quantities ask in
training mode and on a shorter sequence (:mod:`.gather`).  Each quantity is
looked for among the tensors its run computed, in any layout
(:func:`.align.find`); the first that none holds is the divergence, shown
beside the tensor nearest to it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tracer.compare.check import align, lessons, marks, reference, wrapper
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.evidence import Evidence
from tracer.compare.check.model import Divergence, Match, Quantity, Seen, StageResult
from tracer.compare.check.student import StudentError
from tracer.core.trace import Step


def context(ev: Evidence, spec: lessons.Spec, source: str | None) -> Context:
    """The eval run's tensors (the heads of a wrapper stacked) and its result, the others by name."""
    trace = reference.checked(spec, ev.roles)
    ctx = Context(spec, trace, [], ev.roles, runs={r.name: r for r in ev.runs}, other=ev.other, source=source)
    main = ctx.needed("eval")
    seen = wrapper.stacked(main.seen, ev.heads, spec.heads) if ev.heads else main.seen
    ctx.final = Seen("output", "return", np.zeros(0) if main.output is None else main.output, "")
    ctx.seen, ctx.captured = [*seen, ctx.final], main.captured
    for q in spec.quantities:
        ctx.needed(q.run)
    if "train" in ctx.runs:
        ctx.train = ctx.runs["train"].seen
    crash = ctx.runs["short"].error if "short" in ctx.runs else None
    if crash is not None:
        ctx.short_error = StudentError(crash.message, crash.details, crash.cause)
        ctx.short_where = _where(crash.details, source)
    return ctx


def _ref(ctx: Context, q: Quantity) -> tuple[np.ndarray, tuple[str, ...]]:
    node = ctx.trace.node(q.step)
    value = np.asarray(node.value, dtype=np.float64)
    if q.run == "short":
        cut = tuple(slice(0, ctx.spec.short) if a in ("i", "j") else slice(None) for a in node.axes)
        value = value[cut]
    return value, node.axes


def compare(ctx: Context, q: Quantity) -> StageResult:
    """Quantity ``q`` among the tensors its run computed (the eval run's result included)."""
    ref, axes = _ref(ctx, q)
    seen = ctx.seen if q.run == "eval" else ctx.runs[q.run].seen
    m = align.find(ref, axes, seen)
    if m is not None:
        return StageResult(q, "match", m)
    return StageResult(q, "differs", None, align.nearest(ref, axes, seen))


def mark(ctx: Context, stages: list[StageResult]) -> None:
    """Settle each stage's status (:mod:`.marks`); heads that share their weights differ at the projections."""
    assert ctx.final is not None
    marks.returned(ctx, stages, ctx.final)
    marks.mark_optional(stages)
    marks.inside_opaque(ctx, stages)
    marks.other_draws(ctx, stages)
    if wrapper.shared(ctx.roles) and ctx.spec.form == "wrap" and not any(s.status == "differs" for s in stages):
        first = next(x for x in stages if x.quantity.key == "q")  # every value follows, but the heads are one head
        first.status, first.note = "differs", "shared"


def notes(ctx: Context, stages: list[StageResult]) -> list[str]:
    """Remarks on what was compared: dropout not compared in training mode (several heads), calls recorded whole."""
    out = []
    if ctx.spec.multi and stages:
        out.append("no_train_dropout")
    if ctx.captured is not None and ctx.captured.meta.get("opaque"):
        out.append("opaque")
    return out


def _consequence(ctx: Context, s: StageResult, stages: list[StageResult], shape: tuple[int, ...]) -> np.ndarray | None:
    """How far the student's weights (the first later stage of the run) are from the lesson's, in ``shape``.

    A scaling or masking mistake shows in the weights that follow it; the
    divergence is shown where they differ most (see
    :func:`~tracer.compare.check.align.first_difference`).  A batch the
    divergence's own step lacks is read at its first sequence; None when no
    later stage has the same entries.
    """
    for t in stages[stages.index(s) + 1 :]:
        m = t.match or t.nearest
        if t.quantity.run != s.quantity.run or t.quantity.stage == s.quantity.stage or m is None:
            continue
        ref, got = _ref(ctx, t.quantity)[0], m.view()
        extra = ref.ndim - len(shape)
        if ref.shape == got.shape and extra >= 0 and ref.shape[extra:] == shape:
            first = (0,) * extra
            return align.gaps(ref[first], got[first])
        return None
    return None


def _nearest(ctx: Context, s: StageResult, hit: Hit | None, stages: list[StageResult]) -> Match | None:
    """The tensor shown beside the divergence: the nearest made from the last quantity right onwards, or the hit's."""
    ref, axes = _ref(ctx, s.quantity)
    near = s.nearest
    if s.quantity.run == "eval":
        order = {id(t): n for n, t in enumerate(ctx.seen)}
        done = [
            order.get(id(t.match.seen), 0) for t in stages[: stages.index(s)] if t.match and t.quantity.run == "eval"
        ]
        later = align.nearest(ref, axes, ctx.seen[max(done, default=0) :])
        near = later if later is not None else near
    if hit is not None and hit.seen is not None:  # the mistake's own tensor, unless another is nearer
        shown = align.nearest(ref, axes, [hit.seen])
        if shown is not None and (near is None or align.distance(shown, ref) <= align.distance(near, ref)):
            near = shown
    return near


def divergence(ctx: Context, s: StageResult, hit: Hit | None, stages: list[StageResult]) -> Divergence:
    """Where stage ``s`` first differs: the lesson's entry, the student's beside it, and where the code made it."""
    ref, _ = _ref(ctx, s.quantity)
    node = ctx.trace.node(s.quantity.step)
    near = _nearest(ctx, s, hit, stages)
    note = ""
    if near is not None:
        got = near.view()
        idx = align.first_difference(ref, got, _consequence(ctx, s, stages, ref.shape))
        student_value: float | None = float(got[idx])
        where = near.seen.where
    else:
        idx = tuple(0 for _ in ref.shape)
        student_value, where = None, ""
    if s.quantity.run == "short" and ctx.short_error is not None:
        note = ctx.short_error.cause
        where = ctx.short_where
    if hit is not None and hit.code == "heads_shared":  # head 2 equals head 1: show where it does
        idx = (1, *(0 for _ in ref.shape[1:]))
        student_value, note = float(ref[idx]), "shared"
    element = Step(ctx.trace, node, tuple(int(i) for i in idx)).id
    mine = _student_step(ctx, near, idx) if near is not None and s.quantity.run == "eval" else None
    q = s.quantity
    tensor = near.seen.id if near is not None else None
    return Divergence(q.run, q.stage, q.key, q.step, element, float(ref[idx]), student_value, tensor, where, note, mine)


def _student_step(ctx: Context, m: Match, idx: tuple[int, ...]) -> str | None:
    """The id, in the student's captured trace, of the entry shown beside the lesson's element ``idx``."""
    if ctx.captured is None or m.seen.id not in {n.name for n in ctx.captured.nodes}:
        return None
    node = ctx.captured.node(m.seen.id)
    at = [0] * (len(m.split) if m.split else node.value.ndim - m.lead)
    for r, axis in enumerate(m.perm):
        at[axis] = int(idx[r])
    if m.split:  # the merged batch·heads axis: the two indices back into one
        flat = np.ravel_multi_index(tuple(at), m.split)
        at = [int(i) for i in np.unravel_index(flat, node.value.shape[m.lead :])]
    return Step(ctx.captured, node, (0,) * m.lead + tuple(at)).id


def _where(details: str, source: str | None) -> str:
    """``file.py:LINE`` of the last frame of the student's file in a traceback."""
    name = Path(source).name if source else None
    last = ""
    for line in details.splitlines():
        line = line.strip()
        if line.startswith('File "'):
            path, _, rest = line[6:].partition('", line ')
            if name is None or Path(path).name == name:
                last = f"{Path(path).name}:{rest.split(',')[0]}"
    return last
