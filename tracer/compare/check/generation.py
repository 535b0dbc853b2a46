"""Check a KV cache (lesson ``kvcache``): drive the student's module through a generation, call by call.

The module is built as the book's modules are (``Cls(d_in, d_out,
context_length)`` under the lesson's seed) and its weights are found by
:mod:`.roles`.  Then it generates: the batch of two copies of the six tokens
goes in as the calls :data:`CALLS` (a prompt of two tokens, tokens 3 and 4
one at a time, then tokens 5 and 6 in one call, as a prompt fed in pieces or
a draft being verified does).  Every call's context rows are compared with
the lesson's trace run on the same calls, which are the rows of full causal
attention; the first call that differs is named, and :mod:`.cachemistakes`
says which mistake predicts every call's result.

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

from tracer.compare.check import align, build, cachemistakes, deadline, lessons, reference, roles, sizing
from tracer.compare.check.evidence import Evidence, Failure, Malformed
from tracer.compare.check.model import Divergence, Match, Quantity, Seen, StageResult
from tracer.compare.check.result import CheckResult
from tracer.compare.check.student import StudentError, name_of, raised, returned
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
) -> list[Call]:
    """Run every call of ``spans`` (a lesson's ``calls``) on ``module``; a call that raises ends the generation."""
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
            x_new = x[:, a - 1 : b, :]
            try:
                given = {param: cache, **ask} if kind == "passed" else {param: True} if param else {}
                out = _guard(module, x_new, {**given, **_where(at, a, b, x_new.shape[0])})
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

    Each call's result is a :class:`~.model.Seen` ``call<n>``; a call that
    raised is ``op="raised"`` with the crash kept as ``short_error`` (a
    generation ends at its first crash).
    """
    name = name_of(obj)
    ev = Evidence(name)
    try:
        module, ev.built, ev.roles, _, spec, ev.square = build.module_for(obj, spec)
    except roles.Structural as e:  # another attention than the lesson's: no generation to compare
        ev.structural = (e.code, dict(e.detail))
        return ev
    ev.bias = spec.bias
    calls = generate(module, reference.inputs(spec), convention(module), spec.seed, spec.calls)
    for n, call in enumerate(calls, start=1):
        if call.error is not None:
            ev.seen.append(Seen(f"call{n}", "raised", np.zeros(0), ""))
            ev.short_error = Failure(call.error.message, call.error.details, call.error.cause)
        else:
            assert call.out is not None
            ev.seen.append(Seen(f"call{n}", "return", call.out, ""))
    if calls and calls[0].out is not None:
        ev.output = calls[0].out
    return ev


def judge(ev: Evidence, spec: lessons.Spec, label: str) -> CheckResult:
    """The verdict (the parent's half): every call's context rows against the lesson's, the mistake named."""
    if ev.square and spec.is_class:
        spec = sizing.sized(spec, spec.d_out, spec.d_out)
    found = ev.roles
    if any(r not in found for r in roles.QKV):
        raise Malformed("the weights found name no query, key and value")
    try:
        trace = reference.reference(spec, found)
    except (ValueError, IndexError, KeyError, RuntimeError, TypeError) as e:
        raise Malformed(f"the weights found do not fit the lesson's inputs ({type(e).__name__})") from None
    by_id = {s.id: s for s in ev.seen}
    calls: list[Call] = []
    for n in range(1, len(spec.calls) + 1):
        seen = by_id.get(f"call{n}")
        if seen is None:
            break
        if seen.op == "raised":
            crash = ev.short_error or Failure(Message("trouble.check_failed"))
            calls.append(Call(None, StudentError(crash.message, crash.details, crash.cause)))
            break
        calls.append(Call(np.asarray(seen.value, dtype=np.float64)))
    got: list[np.ndarray | None] = []
    stages: list[StageResult] = []
    first: tuple[int, StageResult] | None = None
    for n, (a, b) in enumerate(spec.calls, start=1):
        q = Quantity(f"call{n}", "generation", f"step{n}.z", run=f"call:{a}-{b}")
        want = trace.tensor(f"step{n}.z")
        call = calls[n - 1] if n <= len(calls) else None
        mine = rows(call.out, *want.shape) if call is not None and call.out is not None else None
        got.append(mine)
        if call is None:
            stages.append(StageResult(q, "not compared"))
            continue
        ok = mine is not None and align.close(mine, want)
        held = Match(Seen(f"forward(x[:, {a - 1}:{b}])", "return", mine), (0, 1)) if mine is not None else None
        stage = StageResult(q, "match" if ok else ("differs" if first is None else "consequence"))
        stage.match, stage.nearest = (held, None) if ok else (None, held)
        if not ok and first is None:
            first = (n, stage)
        stages.append(stage)
    if first is None:
        return CheckResult(spec.name, stages, None, None, list(found.values()), trace, [], label, None, ev.built)
    n, stage = first
    error = calls[n - 1].error if n <= len(calls) else None
    hit = cachemistakes.diagnose(trace, spec.calls, got, error)
    if error is not None and hit is None:
        raise error  # a crash no mistake of the catalogue explains: trouble, as any crash
    div = _divergence(trace, spec.calls[n - 1], stage, got[n - 1], error)
    return CheckResult(spec.name, stages, div, hit, list(found.values()), trace, [], label, None, ev.built)


def _divergence(
    trace: Any, call: tuple[int, int], stage: StageResult, mine: np.ndarray | None, error: StudentError | None
) -> Divergence:
    """Where ``call`` (its first and last token) first differs: the lesson's entry, the student's value beside it."""
    q = stage.quantity
    want = np.asarray(trace.tensor(q.step), dtype=np.float64)
    if mine is not None:
        idx = align.first_difference(want, mine)
        student: float | None = float(mine[idx])
    else:
        idx, student = (0, 0), None
    a, b = call
    element = Step(trace, trace.node(q.step), tuple(int(i) for i in idx)).id
    note = error.cause if error is not None else ""
    return Divergence(
        q.run, q.stage, q.key, q.step, element, float(want[idx]), student, f"forward(x[:, {a - 1}:{b}])", "", note
    )
