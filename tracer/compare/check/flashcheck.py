"""``check --lesson flash``: a student's online softmax, called at three sizes, against the lesson's result.

The subject is a function ``flash_attention(q, k, v, block_size)`` (a
``causal=True`` keyword may follow) returning causal attention's context
vectors ``[T, d_v]`` for queries, keys and values ``[T, d]``, computed with
an explicit loop over blocks of ``block_size`` keys (``docs/check.md``).
Its inputs are the lesson's queries, keys and values (the causal lesson's
weights, ``torch.manual_seed(789)``) of the tutorial's six tokens *in reverse
order*: in the tutorial's order key 1 holds every row's largest score, so the
running max never rises and a loop that forgets to rescale would still be
right; reversed, it rises on most rows.  The function is called

* at the lesson's block size, B = 2 (run ``eval``);
* at B = 4, which does not divide T = 6 (run ``block``): a block size
  written into the loop, or a last block that is dropped, shows here;
* on the first five tokens, B = 2 (run ``short``): another T, with a last
  block of one key; causal attention's first rows must not change.

Each result must be the lesson's (``flash.z`` of the reference trace, its
first rows for ``short``) within :mod:`.align`'s tolerance.  Where one is
not, the lesson's own mistakes (its ``Spec.mistakes``) each predict the
results at the same sizes: the first whose results the student's match at
every size is the diagnosis.  This is the check's driver for lessons whose
``driver`` is ``qkv`` (:mod:`.drivers`).
"""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tracer.compare.check import align
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.evidence import Evidence, Malformed, Run
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Divergence, Match, Quantity, Role, Seen, StageResult
from tracer.compare.check.student import StudentError, _failure, _one_line, name_of, returned
from tracer.core.trace import Step, Trace
from tracer.errors import InputError
from tracer.message import Message
from tracer.record import registry
from tracer.record.inputs import tutorial


def reference(spec: Spec) -> Trace:
    """The lesson on the tutorial's tokens in reverse order, at its own block size (the check's reference)."""
    flash = registry.pipeline_module(spec.name)
    rows, tokens = tutorial()
    x = torch.tensor(rows[::-1], dtype=torch.float32)
    meta = {"dtype": "float32", "n_tokens": 6, "dim": 3, "source": {"kind": "tutorial", "order": "reversed"}}
    extra = flash.prepare(x, block=spec.args[0])
    trace: Trace = flash.build(x, tokens[::-1], 2, torch.float32, meta, **extra)
    return trace


def sizes(spec: Spec) -> dict[str, tuple[int, int]]:
    """Run -> (tokens, block size) the function is called with: its own, another block size, fewer tokens."""
    block = int(spec.args[0])
    return {"eval": (6, block), "block": (6, spec.block), "short": (spec.short, block)}


def collect(obj: Any, spec: Spec) -> Evidence:
    """The student's half: call ``obj`` at the three sizes and keep its results (run in the child)."""
    if not callable(obj) or isinstance(obj, type):
        raise InputError(Message("trouble.flash_wants_function", obj=repr(obj)))
    q, k, v = inputs(reference(spec))
    runs = []
    for run, (t, b) in sizes(spec).items():
        got = _call(obj, torch.from_numpy(q[:t]), torch.from_numpy(k[:t]), torch.from_numpy(v[:t]), b)
        runs.append(Run(run, output=np.zeros(0) if got is None else got))  # empty: another shape
    return Evidence(name_of(obj), runs=runs)


def inputs(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The queries, keys and values the function is called with (float32 values, as float64 arrays)."""
    q, k, v = (np.array(trace.tensor(n)) for n in ("q", "k", "v"))
    return q, k, v


def trace_of(spec: Spec, found: dict[str, Role]) -> Trace:
    """The lesson's trace (the function has no weights: ``found`` is empty)."""
    return reference(spec)


def context(ev: Evidence, spec: Spec, source: str | None) -> Context:
    """The lesson's trace and the student's results by run; a run missing or extra is malformed data."""
    at = sizes(spec)
    got = sorted(r.name for r in ev.runs)
    if got != sorted(at):
        raise Malformed(Message("check.results_runs_were_expected", at=str(sorted(at)), got=str(got[:5])))
    runs = {r.name: r for r in ev.runs}
    return Context(spec, trace_of(spec, ev.roles), [], {}, runs=runs, other=ev.other, source=source)


def results(ctx: Context) -> dict[str, np.ndarray | None]:
    """Each run's result as a float64 ``[T, d_v]`` array, None where it has another shape."""
    d_v = int(ctx.trace.tensor("v").shape[1])
    got: dict[str, np.ndarray | None] = {}
    for run, (t, _) in sizes(ctx.spec).items():
        out = ctx.runs[run].output
        a = np.zeros(0) if out is None else np.asarray(out, dtype=np.float64)
        got[run] = a if a.shape == (t, d_v) else None
    return got


def _want(ctx: Context, run: str) -> np.ndarray:
    """The lesson's context vectors for the tokens of ``run``."""
    return np.asarray(ctx.trace.tensor("flash.z"), dtype=np.float64)[: sizes(ctx.spec)[run][0]]


def compare(ctx: Context, q: Quantity) -> StageResult:
    """Run ``q.run``'s result against the lesson's rows, within :mod:`.align`'s tolerance."""
    got = results(ctx)[q.run]
    if got is None:
        return StageResult(q, "differs", None, None, "shape")
    want = _want(ctx, q.run)
    m = Match(Seen("output", "return", got), (0, 1), 0, align.error(got, want))
    return StageResult(q, "match", m) if align.close(got, want) else StageResult(q, "differs", None, m)


def divergence(ctx: Context, s: StageResult, hit: Hit | None, stages: list[StageResult]) -> Divergence:
    """Where run ``s`` first differs from the lesson's rows (the result itself: nothing inside is captured)."""
    trace, q = ctx.trace, s.quantity
    want, got = _want(ctx, q.run), results(ctx)[q.run]
    node = trace.node(q.step)
    idx = align.first_difference(want, got) if got is not None else (0, 0)
    element = Step(trace, node, tuple(int(i) for i in idx)).id
    student = float(got[idx]) if got is not None else None
    where = Path(ctx.source).name if ctx.source else ""
    return Divergence(q.run, q.stage, q.key, q.step, element, float(want[idx]), student, "output", where)


def _block_args(fn: Any) -> int:
    """How many block sizes ``fn`` wants after q, k, v: 2 for the paper's ``(Q, K, V, B_r, B_c)``, else 1.

    The FlashAttention paper tiles queries in blocks of ``B_r`` rows and keys
    in blocks of ``B_c``; a function with two required parameters after the
    three tensors gets the block size for both.
    """
    try:
        params = list(inspect.signature(fn).parameters.values())[3:]
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params if p.kind in kinds and p.default is inspect.Parameter.empty]
    return 2 if len(required) == 2 else 1


def _call(fn: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, b: int) -> np.ndarray | None:
    """The student's result as a float64 ``[T, d]`` array (None: another shape); a crash is a StudentError."""
    a = called(fn, q, k, v, b)
    return a if a.shape == (q.shape[0], v.shape[1]) else None


def called(fn: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, b: int) -> np.ndarray:
    """``fn(q, k, v, b)`` as a float64 array of any shape (a batch of one unsqueezed); a crash is a StudentError."""
    name = name_of(fn)
    sizes = (b,) * _block_args(fn)
    with torch.no_grad():
        try:
            out = fn(q.clone(), k.clone(), v.clone(), *sizes)
        except (KeyboardInterrupt, InputError):
            raise
        except BaseException as e:  # SystemExit too: the student's code, not ours
            said = Message("trouble.raised_sizes", who=name, error=_failure(e), tokens=q.shape[0], block=b)
            raise StudentError(said, traceback.format_exc(), _one_line(e)) from None
    out = returned(out)  # (O, L): the output and its logsumexp
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        raise InputError(Message("trouble.not_float_tensor", who=name, type=type(out).__name__))
    a = out.detach().to(torch.float64).cpu().numpy()
    while a.ndim > 2 and a.shape[0] == 1:  # an unsqueezed batch of one
        a = a[0]
    return a.copy()
