"""Check a KV cache (lesson ``kvcache``): drive the student's module through a generation, call by call.

The module is built as the book's modules are (``Cls(d_in, d_out,
context_length)`` under the lesson's seed) and its weights are found by
:mod:`.roles`.  Then it generates: the batch of two copies of the six tokens
goes in as the calls :data:`CALLS` (a prompt of two tokens, tokens 3 and 4
one at a time, then tokens 5 and 6 in one call, as a prompt fed in pieces or
a draft being verified does).  Every call's context rows are compared with
the lesson's trace run on the same calls, which are the rows of full causal
attention; the first call that differs is named, and the lesson's own
mistakes (its ``Spec.mistakes``) say which predicts every call's result.
This is the check's driver for lessons whose ``driver`` is ``generation``
(:mod:`.drivers`).

Two ways of keeping the cache are understood (``docs/check.md``):

- passed in and returned: ``forward(x_new, cache)`` returns
  ``(context, cache)``; the first call gets ``None`` (the parameter is
  recognised by its name: ``cache``, ``kv_cache``, ``past_key_value`` …),
  and ``use_cache=True`` when ``forward`` takes it (GPT-2 returns its
  ``present`` only then);
- kept on the module: ``forward(x_new)`` (or ``forward(x_new, use_cache=True)``,
  the book's form) returns the context, and ``reset_cache()`` (or ``reset()``)
  empties it before a generation.

Either way ``forward`` may also take the new tokens' position, as code with a
preallocated cache often does: an ``int`` named ``start_pos`` (Meta's
Llama), ``pos``, ``offset``… gets the number of tokens already cached; a
tensor named ``input_pos`` (gpt-fast) or ``cache_position`` gets the new
tokens' 0-based positions, and ``position_ids`` the same for every sample.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tracer.compare.check import align, build, deadline, lessons, reference, roles, spanargs
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.evidence import Evidence, Failure, Run
from tracer.compare.check.model import Divergence, Match, Quantity, Seen, StageResult
from tracer.compare.check.student import StudentError, fitted, name_of, raised, returned
from tracer.core.trace import Step
from tracer.message import Message

CACHE_NAMES = ("cache", "kv_cache", "kvcache", "past", "past_kv", "past_key_value", "past_key_values", "layer_past")
"""Names of a ``forward`` parameter that takes the cache (and makes ``forward`` return it)."""
RESETS = ("reset_cache", "reset_kv_cache", "reset", "clear_cache")
"""Methods that empty a cache kept on the module."""
STARTS = ("start_pos", "start", "pos", "offset", "past_length", "past_len", "cur_pos", "n_past")
"""Names of a ``forward`` parameter that takes the first new token's 0-based position, an int."""
POSITIONS = ("input_pos", "cache_position", "positions")
"""Names of one that takes every new token's 0-based position as a 1-d tensor (``position_ids``: one row per sample)."""


@dataclass
class Call:
    """One call of the generation: what it returned (as an array), or the error it raised."""

    out: np.ndarray | None
    error: StudentError | None = None


def convention(module: torch.nn.Module) -> tuple[str, str]:
    """How the module keeps its cache: ``("passed", parameter)``, ``("use_cache", "use_cache")`` or ``("kept", "")``."""
    try:
        params = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        return "kept", ""
    for p in params[1:]:
        if p.lower() in CACHE_NAMES:
            return "passed", p
    return ("use_cache", "use_cache") if "use_cache" in params else ("kept", "")


def position(module: torch.nn.Module) -> str:
    """The ``forward`` parameter that takes the new tokens' position (:data:`STARTS`, :data:`POSITIONS`), or ``""``."""
    try:
        params = list(inspect.signature(module.forward).parameters)[1:]
    except (TypeError, ValueError):
        return ""
    return next((p for p in params if p.lower() in (*STARTS, *POSITIONS, "position_ids")), "")


def _takes(module: torch.nn.Module, name: str) -> bool:
    """True when ``forward`` has a parameter ``name`` (GPT-2 returns its cache only when asked: ``use_cache``)."""
    try:
        return name in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


def _where(param: str, a: int, b: int, batch: int) -> dict[str, Any]:
    """The keyword that tells a call on tokens ``a..b`` (1-based) where they stand, in the form ``param`` takes."""
    if not param:
        return {}
    if param.lower() in STARTS:
        return {param: a - 1}
    at = torch.arange(a - 1, b)
    return {param: at.unsqueeze(0).expand(batch, -1) if param.lower() == "position_ids" else at}


def generate(
    module: torch.nn.Module,
    x: torch.Tensor,
    how: tuple[str, str],
    seed: int,
    spans: tuple[tuple[int, int], ...],
    further: spanargs.Span | None = None,
) -> list[Call]:
    """Run every call of ``spans`` (a lesson's ``calls``) on ``module``; a call that raises ends the generation.

    ``further`` makes what each call is passed beyond the new tokens, the
    cache and the position (rotary tables, a mask: :func:`.spanargs.spans`).
    """
    kind, param = how
    at = position(module)
    ask = {"use_cache": True} if kind == "passed" and _takes(module, "use_cache") else {}  # GPT-2's present
    if kind != "passed":
        for name in RESETS:
            reset = getattr(module, name, None)
            if callable(reset):
                _guard(reset)
                break
    cache: Any = None
    calls: list[Call] = []
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        for a, b in spans:
            x_new = fitted(module, x[:, a - 1 : b, :])  # contiguous, as its callers' tensors are
            try:
                given = {param: cache, **ask} if kind == "passed" else {param: True} if param else {}
                extra = further(x_new, a, b) if further is not None else {}
                out = _guard(module, x_new, {**extra, **given, **_where(at, a, b, x_new.shape[0])})
                if kind == "passed":
                    if not isinstance(out, tuple) or len(out) != 2:
                        raise StudentError(Message("trouble.cache_not_pair", param=param, type=type(out).__name__))
                    out, cache = out
            except StudentError as e:
                calls.append(Call(None, e))
                break
            out = returned(out)  # (context, weights) or (context, cache) kept as well
            if not isinstance(out, torch.Tensor) or not out.is_floating_point():
                raise StudentError(Message("trouble.call_not_float", a=a, b=b, type=type(out).__name__))
            calls.append(Call(out.detach().to(torch.float64).cpu().numpy().copy()))
    return calls


def _guard(fn: Any, x: torch.Tensor | None = None, kwargs: dict[str, Any] | None = None) -> Any:
    """``fn(x, **kwargs)`` (``fn()`` without ``x``); the student's exception becomes a :class:`StudentError`."""
    try:
        return fn() if x is None else fn(x, **(kwargs or {}))
    except (KeyboardInterrupt, deadline.Overtime):
        raise
    except BaseException as e:  # SystemExit too: the student's code, not ours
        what = Message("trouble.the_reset") if x is None else Message("trouble.call_new_tokens", n=x.shape[1])
        raise raised(what, e) from None


def rows(out: np.ndarray, n: int, d: int) -> np.ndarray | None:
    """The call's context rows as ``(n, d)``: the first sample of a batch; None when the shape does not fit."""
    a = out[0] if out.ndim == 3 and out.shape[0] >= 1 else out
    return a if a.shape == (n, d) else None


def collect(obj: Any, spec: lessons.Spec) -> Evidence:
    """The student's half (run in the child): build the module, find its weights, run the generation, keep data.

    Each call is a :class:`~.evidence.Run` named after its tokens
    (``call:3-4``, the run its quantity names); a call that raised keeps its
    crash and ends the generation.
    """
    name = name_of(obj)
    ev = Evidence(name)
    try:
        module, ev.built, ev.roles, _, spec, ev.square = build.module_for(obj, spec)
    except roles.Structural as e:  # another attention than the lesson's: no generation to compare
        ev.structural = (e.code, dict(e.detail))
        return ev
    ev.bias = spec.bias
    further = spanargs.spans(module, spec)
    calls = generate(module, reference.inputs(spec), convention(module), spec.seed, spec.calls, further)
    for (a, b), call in zip(spec.calls, calls, strict=False):
        crash = None if call.error is None else Failure(call.error.message, call.error.details, call.error.cause)
        ev.runs.append(Run(_run(a, b), output=call.out, error=crash))
    return ev


def _run(a: int, b: int) -> str:
    """The name of the call on tokens ``a..b`` (1-based)."""
    return f"call:{a}-{b}"


def quantities(spec: lessons.Spec) -> tuple[Quantity, ...]:
    """One quantity per call: its context rows, the lesson's step ``step<n>.z``."""
    return tuple(
        Quantity(f"call{n}", "generation", f"step{n}.z", run=_run(a, b)) for n, (a, b) in enumerate(spec.calls, start=1)
    )


def context(ev: Evidence, spec: lessons.Spec, source: str | None) -> Context:
    """The lesson's trace on the same calls, with the student's weights, and the calls the code answered."""
    trace = reference.checked(spec, ev.roles)
    return Context(spec, trace, [], ev.roles, runs={r.name: r for r in ev.runs}, other=ev.other, source=source)


def _rows(ctx: Context, q: Quantity) -> np.ndarray | None:
    """Call ``q.run``'s context rows in the lesson's shape (None: not made, a crash, or another shape)."""
    run = ctx.runs.get(q.run)
    if run is None or run.output is None:
        return None
    return rows(np.asarray(run.output, dtype=np.float64), *ctx.trace.tensor(q.step).shape)


def compare(ctx: Context, q: Quantity) -> StageResult:
    """Call ``q.run``'s context rows against the lesson's; a call the generation never reached is not compared."""
    if q.run not in ctx.runs:
        return StageResult(q, "not compared")
    mine = _rows(ctx, q)
    held = Match(Seen(_shown(q), "return", mine), (0, 1)) if mine is not None else None
    if mine is not None and align.close(mine, ctx.trace.tensor(q.step)):
        return StageResult(q, "match", held)
    return StageResult(q, "differs", None, held)


def _shown(q: Quantity) -> str:
    """How the call of ``q`` is named to the student: ``forward(x[:, 2:3])``."""
    a, b = (int(n) for n in q.run.partition(":")[2].split("-"))
    return f"forward(x[:, {a - 1}:{b}])"


def answers(ctx: Context) -> tuple[list[np.ndarray | None], StudentError | None]:
    """Every call's rows (None where not answered), and the crash of the first call that is not right, if it crashed."""
    got, error, first = [], None, True
    for q in quantities(ctx.spec):
        mine = _rows(ctx, q)
        got.append(mine)
        run = ctx.runs.get(q.run)
        if first and run is not None and (mine is None or not align.close(mine, ctx.trace.tensor(q.step))):
            first = False
            if run.error is not None:
                error = StudentError(run.error.message, run.error.details, run.error.cause)
    return got, error


def divergence(ctx: Context, s: StageResult, hit: Hit | None, stages: list[StageResult]) -> Divergence:
    """Where call ``s`` first differs: the lesson's entry, the student's value beside it, the crash's cause."""
    q = s.quantity
    want = np.asarray(ctx.trace.tensor(q.step), dtype=np.float64)
    mine = _rows(ctx, q)
    if mine is not None:
        idx = align.first_difference(want, mine)
        student: float | None = float(mine[idx])
    else:
        idx, student = (0, 0), None
    element = Step(ctx.trace, ctx.trace.node(q.step), tuple(int(i) for i in idx)).id
    crash = ctx.runs[q.run].error if q.run in ctx.runs else None
    note = crash.cause if crash is not None else ""
    return Divergence(q.run, q.stage, q.key, q.step, element, float(want[idx]), student, _shown(q), "", note)
