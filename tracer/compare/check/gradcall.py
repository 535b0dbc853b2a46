"""The student's half of ``check --backward``: call a hand-written backward pass, keep what it returned.

Two shapes are called (``docs/check.md``):

* a function ``f(Q, K, V, dO, ...)`` returning ``(dQ, dK, dV)``;
* a subclass of ``torch.autograd.Function`` whose ``forward(ctx, Q, K, V,
  ...)`` returns the output: it is applied to Q, K, V that require their
  gradient, and autograd runs its ``backward`` on the upstream gradient dO
  (``torch.autograd.grad``).  What that ``backward`` returned is kept as it
  was returned, before autograd checks it, so a gradient of another shape is a
  finding, not a crash.

Each is called once per upstream gradient of :func:`.gradref.references`,
with its further parameters (:mod:`.gradargs`).  Nothing is judged here: each
returned value becomes a :class:`~.model.Seen` (``dq``, ``dk``, ``dv``; its
dtype as ``op``, ``none`` or ``type:NAME`` for something that is not a
tensor) of the run, and the parent compares them.
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np
import torch

from tracer.compare.check import gradargs, gradref
from tracer.compare.check.evidence import Evidence, Run
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Seen
from tracer.compare.check.student import StudentError, _failure, _one_line, name_of, raised
from tracer.errors import InputError
from tracer.message import Message

NAMES = ("dq", "dk", "dv")


def is_function_class(obj: Any) -> bool:
    """True for a subclass of ``torch.autograd.Function`` (the second shape)."""
    return isinstance(obj, type) and issubclass(obj, torch.autograd.Function)


def collect(obj: Any, spec: Spec) -> Evidence:
    """Call ``obj`` on each upstream gradient and keep the gradients it returned (run in the child)."""
    grads = spec.gradients
    assert grads is not None
    autograd = is_function_class(obj)
    if not autograd and (not callable(obj) or isinstance(obj, type)):
        raise InputError(Message("trouble.grad_wants", obj=repr(obj)))
    fn, skip = (obj.forward, 3 + _takes_ctx(obj)) if autograd else (obj, 4)  # forward([ctx,] Q, K, V, ...)
    who = f"{name_of(obj)}.forward" if autograd else name_of(obj)
    given = gradargs.bind(fn, skip, who, bool(grads.rate))
    dropout = bool(grads.rate) and gradargs.KEEP in given.values()
    runs = []
    for run, trace in gradref.references(spec, dropout).items():
        tensors = tuple(torch.from_numpy(a.astype(np.float32)) for a in gradref.operands(trace, grads))
        extra = _values(given, trace, spec)
        if autograd:
            got = _through_autograd(obj, tensors, _positional(fn, skip, given, extra))
        else:
            got = _called(obj, tensors, extra)
        runs.append(Run(run, seen=[_seen(n, x) for n, x in zip(NAMES, got, strict=False)]))
        if run == "eval" and not autograd:
            runs.append(Run(gradref.LINES, seen=_lines(obj, tensors, extra)))
    return Evidence(name_of(obj), runs=runs, given=given)


MOST = 5000
"""The most tensors of a function's run kept with their lines (a loop over every entry makes a few hundred)."""


def _lines(fn: Any, tensors: tuple[torch.Tensor, ...], extra: dict[str, Any]) -> list[Seen]:
    """The tensors ``fn`` makes on the first operands, each with the line that made it, for the diagnosis to point at.

    The function runs once more under capture (as a forward check runs its
    subject); a capture that fails loses only the lines, since the gradients
    it returned were compared already.
    """
    from tracer.compare.check import deadline
    from tracer.compare.check.captured import capture, seen

    try:
        with torch.no_grad():
            _, trace, sites = capture(fn, *(t.clone() for t in tensors), **extra)
    except (KeyboardInterrupt, deadline.Overtime):
        raise
    except BaseException:  # the student's code under capture, or the capture itself: no lines, nothing else lost
        return []
    return [s for s in seen(trace, sites) if s.value.size <= LARGEST][:MOST]


def _takes_ctx(cls: Any) -> bool:
    """True when ``cls.forward`` takes ``ctx`` first (False: it defines ``setup_context``, torch's newer form)."""
    return getattr(cls, "setup_context", None) is getattr(torch.autograd.Function, "setup_context", None)


def _values(given: dict[str, str], trace: Any, spec: Spec) -> dict[str, Any]:
    """The value of each further parameter: the lesson's causal flag, its dropout mask (float 0/1) and rate."""
    grads = spec.gradients
    assert grads is not None
    keep = np.array(trace.tensor(grads.keep)) if grads.keep else None
    rate = float(trace.meta.get("dropout", {}).get("p", 0.0)) if grads.keep else 0.0
    out: dict[str, Any] = {}
    for name, kind in given.items():
        if kind == gradargs.CAUSAL:
            out[name] = spec.causal
        elif kind == gradargs.KEEP:
            t = gradref.tokens(trace, grads)
            out[name] = torch.ones(t, t) if keep is None else torch.from_numpy(keep.astype(np.float32))
        else:
            out[name] = rate
    return out


def _positional(fn: Any, skip: int, given: dict[str, str], extra: dict[str, Any]) -> list[Any]:
    """``apply``'s further arguments by position: the given ones, and the defaults of those between them."""
    params = {p.name: p for p in gradargs.parameters(fn, skip)}
    return [extra[n] if n in extra else params[n].default for n in gradargs.positional(fn, skip, given)]


def _called(fn: Any, tensors: tuple[torch.Tensor, ...], extra: dict[str, Any]) -> list[Any]:
    """``fn(Q, K, V, dO, **extra)``'s result as a list of what it returned (a crash is a StudentError)."""
    try:
        with torch.enable_grad():
            out = fn(*(t.clone() for t in tensors), **extra)
    except (KeyboardInterrupt, InputError):
        raise
    except BaseException as e:  # SystemExit too: the student's code, not ours
        raise raised(name_of(fn), e) from None
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _through_autograd(cls: Any, tensors: tuple[torch.Tensor, ...], extra: list[Any]) -> list[Any]:
    """What ``cls.backward`` returned when autograd ran it on dO after ``cls.apply(Q, K, V, *extra)``."""
    q, k, v, do = tensors
    returned: list[Any] = []
    crashed: list[BaseException] = []

    def backward(ctx: Any, *grads: Any) -> Any:
        try:
            out = cls.backward(ctx, *grads)
        except BaseException as e:
            crashed.append(e)
            raise
        returned.append(out)
        return out

    probe: Any = type(cls.__name__, (cls,), {"backward": staticmethod(backward), "__module__": cls.__module__})
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    name = name_of(cls)
    try:
        with torch.enable_grad():
            out = probe.apply(*leaves, *extra)
    except (KeyboardInterrupt, InputError):
        raise
    except BaseException as e:
        raise raised(f"{name}.forward", e) from None
    out = out[0] if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor) else out
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(do.shape):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise InputError(Message("trouble.grad_forward_shape", who=name, got=str(shape), want=str(tuple(do.shape))))
    try:
        torch.autograd.grad(out, leaves, do, allow_unused=True)
    except (KeyboardInterrupt, InputError):
        raise
    except BaseException as e:
        if crashed:
            site = crashed[0]
            raise StudentError(
                Message("trouble.raised", who=f"{name}.backward", error=_failure(site)),
                "".join(traceback.format_exception(site)),
                _one_line(site),
            ) from None
        if not returned:  # autograd refused before the backward ran
            raise raised(name, e) from None
    if not returned:
        raise InputError(Message("trouble.grad_not_run", who=name))
    got = returned[0]
    return list(got) if isinstance(got, (tuple, list)) else [got]


LARGEST = 100_000
"""The most entries a returned gradient is sent with (the lessons' have a few dozen); a larger one is sent as its
shape alone (``op`` ``shape:AxB``), which is all its verdict needs: it has another shape than its input."""


def _seen(name: str, x: Any) -> Seen:
    """One returned value as data: its values as float64, its dtype (or what it is instead) as ``op``."""
    if isinstance(x, torch.Tensor) and x.numel() > LARGEST:
        return Seen(name, "shape:" + "x".join(map(str, x.shape)), np.zeros(0))
    if isinstance(x, torch.Tensor):
        kind = str(x.dtype).removeprefix("torch.")
        value = x.detach().to("cpu")
        value = value.to(torch.float64) if not value.is_complex() else value.real.to(torch.float64)
        return Seen(name, kind, value.numpy().copy())
    return Seen(name, "none" if x is None else f"type:{type(x).__name__}", np.zeros(0))
