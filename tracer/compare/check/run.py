"""Check a student's attention code against a lesson: build, run, align, find the first divergence, diagnose."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from tracer.compare.check import (
    align,
    deadline,
    flashcheck,
    forwardargs,
    generation,
    lessons,
    marks,
    reference,
    resize,
    resizeref,
    roles,
    sizing,
    student,
    wrapper,
)
from tracer.compare.check.catalogue import BY_CODE, diagnose
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.evidence import Evidence, Malformed
from tracer.compare.check.gather import gather
from tracer.compare.check.model import Divergence, Match, Quantity, Seen, StageResult
from tracer.compare.check.result import CheckResult
from tracer.compare.check.student import name_of
from tracer.core.trace import Step
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
    A module that maps ``d`` to ``d`` (one width parameter such as
    ``embed_dim``, or weights that only fit that way) is checked with
    ``d_in = d_out`` (note ``square``).
    """
    spec = spec_for(lesson, d_out, d_in, heads, rope_style)
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
) -> lessons.Spec:
    """Lesson ``lesson`` with the sizes asked for (an :class:`~tracer.errors.InputError` names a wrong one)."""
    if lesson not in lessons.SPECS:
        raise InputError(unknown("lesson", lesson, lessons.SPECS))
    spec = lessons.SPECS[lesson]
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

    ``spec`` is the lesson as the teacher sized it; the evidence says whether
    the module was built square or as a wrapper of heads.  The reference is
    computed here, on the lesson's own inputs, with the weights the evidence
    names; every student tensor is only compared with it.  Data that does not
    fit the lesson (missing runs, weights of the wrong shape) raises
    :class:`~.evidence.Malformed`.
    """
    label = f"{Path(source).name}:{ev.name}" if source else ev.name
    if spec.driver == lessons.QKV:  # a function called at three sizes, and once more at others: its results only
        return _resized(flashcheck.judge(ev, spec, source, label), spec, ev)
    if ev.structural is not None:  # another attention than the lesson's: a verdict, not trouble
        code, detail = ev.structural
        if code not in BY_CODE:
            raise Malformed(f"the structural difference {code[:40]!r} is not one the check knows")
        return _structural(spec, label, code, detail)
    if ev.bias:  # the projections' biases are the module's own: the reference adds them
        spec = replace(spec, bias=True)
    if spec.driver == lessons.GENERATION:  # a generation, call by call (and one more at other sizes)
        return _resized(generation.judge(ev, spec, label), sizing.squared(spec, ev.square), ev)
    if ev.square and spec.is_class:
        spec = sizing.sized(spec, spec.d_out, spec.d_out)
    if ev.wrap and spec.multi:
        spec = sizing.wrapped(spec, ev.wrap, "W_out" in ev.roles)
    found = ev.roles
    if spec.is_class and any(r not in found for r in roles.QKV):
        raise Malformed("the weights found name no query, key and value")
    try:
        trace = reference.reference(spec, found)
    except (ValueError, IndexError, KeyError, RuntimeError, TypeError) as e:
        raise Malformed(f"the weights found do not fit the lesson's inputs ({type(e).__name__})") from None
    seen = wrapper.stacked(ev.seen, ev.heads, spec.heads) if ev.heads else ev.seen
    final = Seen("output", "return", ev.output, "")
    ctx = Context(spec, trace, [*seen, final], found, final, captured=ev.captured)
    runs: dict[str, list[Seen]] = {"eval": ctx.seen}
    if spec.is_class and any(q.run == "train" for q in spec.quantities):
        ctx.train = runs["train"] = _needed(ev.train, "the run in training mode")
    if spec.is_class and spec.short:
        runs["short"] = _needed(ev.short, "the run on a shorter sequence")
        if ev.short_error is not None:
            crash = ev.short_error
            ctx.short_error = student.StudentError(crash.message, crash.details, crash.cause)
            ctx.short_where = _where(crash.details, source)
    stages = [_compare(ctx, q, runs[q.run]) for q in spec.quantities]
    marks.returned(ctx, stages, final)
    marks.mark_optional(stages)
    marks.inside_opaque(ctx, stages)
    marks.other_draws(ctx, stages)
    chosen, hit = _first(ctx, stages)
    same = wrapper.shared(found) if ev.heads else ""
    if chosen is None and same:  # every value follows from the weights, but the heads are one head
        chosen = next(x for x in stages if x.quantity.key == "q")
        chosen.status, chosen.note = "differs", "shared"
        hit = BY_CODE["heads_shared"].test(ctx)
        hit = Hit(None, hit.steps, hit.detail, "heads_shared") if hit is not None else None
    if chosen is not None and chosen.quantity.run == "short" and ctx.short_error is not None and hit is None:
        raise ctx.short_error
    if chosen is None and spec.is_class and spec.rebuilds is not None:  # every stage matches: at other sizes?
        hit = resize.hit(spec, _needed(ev.other, "the second build"))
    divergence = _divergence(ctx, chosen, hit, stages) if chosen is not None else None
    if chosen is not None:
        after = stages[stages.index(chosen) + 1 :]
        for s in after:
            if s.status == "differs":
                s.status = "consequence"
    notes = ["square"] * ev.square + forwardargs.notes(ev.given) + ["returned_tuple"] * bool(ev.returned)
    notes += _notes(ctx, stages)
    return CheckResult(
        spec.name,
        stages,
        divergence,
        hit,
        list(found.values()),
        trace,
        notes,
        label,
        ev.captured,
        ev.built,
        _heads(spec),
        dict(ev.given),
    )


def _resized(result: CheckResult, spec: lessons.Spec, ev: Evidence) -> CheckResult:
    """``result`` (lessons flash and kvcache), with ``sizes_ignored`` when it matches but a second build does not."""
    if result.ok:
        result.hit = resize.hit(spec, _needed(ev.other, "the second build"))
    return result


def _structural(spec: lessons.Spec, label: str, code: str, detail: dict[str, str]) -> CheckResult:
    """The result for a module whose structure is not the lesson's (no stage can be compared)."""
    from tracer.core.trace import Trace

    hit = Hit(None, (), detail, code)
    return CheckResult(spec.name, [], None, hit, [], Trace([], {"lesson": spec.name}), [], label, heads=_heads(spec))


def _heads(spec: lessons.Spec) -> int:
    """The number of heads checked (0 for the lessons without ``num_heads``)."""
    return spec.heads if spec.multi else 0


def _needed(got: Any, what: str) -> Any:
    if got is None:
        raise Malformed(f"{what} is missing")
    return got


def _ref(ctx: Context, q: Quantity) -> tuple[np.ndarray, tuple[str, ...]]:
    node = ctx.trace.node(q.step)
    value = np.asarray(node.value, dtype=np.float64)
    if q.run == "short":
        cut = tuple(slice(0, ctx.spec.short) if a in ("i", "j") else slice(None) for a in node.axes)
        value = value[cut]
    return value, node.axes


def _compare(ctx: Context, q: Quantity, seen: list[Seen]) -> StageResult:
    ref, axes = _ref(ctx, q)
    lead = None
    m = align.find(ref, axes, seen, lead)
    if m is not None:
        return StageResult(q, "match", m)
    return StageResult(q, "differs", None, align.nearest(ref, axes, seen, lead))


def _first(ctx: Context, stages: list[StageResult]) -> tuple[StageResult | None, Hit | None]:
    """The first divergence and its diagnosis.

    The first unmatched quantity opens a run of unmatched quantities of its
    group (alternatives such as masking before or after scaling); the first
    catalogue entry that applies to one of their stages and is borne out
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
    hit = diagnose(ctx, [s.quantity.stage for s in group])
    if hit is None:
        return head, None
    entry = BY_CODE[hit.code]
    for stage in entry.stages:
        for s in group:
            if s.quantity.stage == stage:
                return s, hit
    return head, hit


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


def _divergence(ctx: Context, s: StageResult, hit: Hit | None, stages: list[StageResult]) -> Divergence:
    ref, axes = _ref(ctx, s.quantity)
    node = ctx.trace.node(s.quantity.step)
    near = s.nearest
    if s.quantity.run == "eval":  # nearest among what the code made from the last quantity it got right onwards
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
    return Divergence(
        s.quantity.run,
        s.quantity.stage,
        s.quantity.key,
        s.quantity.step,
        element,
        float(ref[idx]),
        student_value,
        near.seen.id if near is not None else None,
        where,
        note,
        mine,
    )


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
    name = Path(source).name if source else None
    last = ""
    for line in details.splitlines():
        line = line.strip()
        if line.startswith('File "'):
            path, _, rest = line[6:].partition('", line ')
            if name is None or Path(path).name == name:
                last = f"{Path(path).name}:{rest.split(',')[0]}"
    return last


def _notes(ctx: Context, stages: list[StageResult]) -> list[str]:
    notes = []
    if ctx.spec.multi:
        notes.append("no_train_dropout")
    if ctx.captured is not None and ctx.captured.meta.get("opaque"):
        notes.append("opaque")
    return notes
