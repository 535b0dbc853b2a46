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
not, each mistake of :mod:`.online` is computed on the same inputs at the
same sizes: the first whose results the student's match at every size is
the diagnosis.
"""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tracer.compare.check import align, online
from tracer.compare.check.context import Hit
from tracer.compare.check.evidence import Evidence, Malformed
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Divergence, Match, Seen, StageResult
from tracer.compare.check.result import CheckResult
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
    trace = reference(spec)
    q, k, v = (torch.from_numpy(np.array(trace.tensor(n))) for n in ("q", "k", "v"))
    seen = []
    for run, (t, b) in sizes(spec).items():
        got = _call(obj, q[:t], k[:t], v[:t], b)
        seen.append(Seen(run, "return", np.zeros(0) if got is None else got, ""))  # empty: another shape
    name = name_of(obj)
    return Evidence(name, seen=seen, output=seen[0].value)


def judge(ev: Evidence, spec: Spec, source: str | None, label: str) -> CheckResult:
    """The verdict on the results :func:`collect` kept, against this process's own reference (the parent's half)."""
    at = sizes(spec)
    trace = reference(spec)
    q, k, v = (torch.from_numpy(np.array(trace.tensor(n))) for n in ("q", "k", "v"))
    by_run = {s.id: s.value for s in ev.seen}
    if set(by_run) != set(at):
        raise Malformed(f"the results of the runs {sorted(at)} were expected, got {sorted(by_run)[:5]}")
    got: dict[str, np.ndarray | None] = {}
    for run, (t, _) in at.items():
        a = np.asarray(by_run[run], dtype=np.float64)
        got[run] = a if a.shape == (t, int(v.shape[1])) else None
    want = np.asarray(trace.tensor("flash.z"), dtype=np.float64)
    stages = [_stage(q_, want[: at[q_.run][0]], got[q_.run]) for q_ in spec.quantities]
    bad = next((s for s in stages if s.status == "differs"), None)
    if bad is None:
        return CheckResult(spec.name, stages, None, None, [], trace, [], label)
    for s in stages[stages.index(bad) + 1 :]:
        if s.status == "differs":
            s.status = "consequence"
    hit = _diagnose(q, k, v, at, got)
    t = at[bad.quantity.run][0]
    div = _divergence(trace, bad, want[:t], got[bad.quantity.run], source)
    return CheckResult(spec.name, stages, div, hit, [], trace, [], label)


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


def _stage(q: Any, want: np.ndarray, got: np.ndarray | None) -> StageResult:
    if got is None:
        return StageResult(q, "differs", None, None, "shape")
    m = Match(Seen("output", "return", got), (0, 1), 0, align.error(got, want))
    return StageResult(q, "match", m) if align.close(got, want) else StageResult(q, "differs", None, m)


def _diagnose(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sizes: dict[str, tuple[int, int]], got: dict[str, Any]
) -> Hit | None:
    """The first mistake whose results the student's match at every size."""
    qq, kk, vv = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if any(g is None for g in got.values()):
        return None
    for code, forms in online.MISTAKES.items():
        for form, loop in forms.items():
            if all(align.close(got[r], loop(qq[:t], kk[:t], vv[:t], b)) for r, (t, b) in sizes.items()):
                t, b = sizes["block"]
                detail = {"form": form, "block": str(b), "tokens": str(t), "kept": str((t // b) * b)}
                return Hit(None, ("flash.m", "flash.c", "flash.l", "flash.o", "flash.z"), detail, code)
    return None


def _divergence(
    trace: Trace, s: StageResult, want: np.ndarray, got: np.ndarray | None, source: str | None
) -> Divergence:
    node = trace.node("flash.z")
    idx = align.first_difference(want, got) if got is not None else (0, 0)
    element = Step(trace, node, tuple(int(i) for i in idx)).id
    student = float(got[idx]) if got is not None else None
    where = Path(source).name if source else ""
    return Divergence(s.quantity.run, "context", "z", "flash.z", element, float(want[idx]), student, "output", where)
