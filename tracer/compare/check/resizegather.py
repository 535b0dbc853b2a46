"""The student's half of the second builds: each module built again at other sizes, its weights found, called.

:mod:`.resize` says which sizes and judges what comes back; this module runs
in the child that runs the student's code and sends back only data
(:class:`.evidence.Other`): the weights it took for each role and each
mode's result, or what went wrong building or calling it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tracer.compare.check import (
    build,
    convention,
    flashcheck,
    forwardargs,
    generation,
    resize,
    roles,
    spanargs,
    student,
    wrapper,
)
from tracer.compare.check.evidence import Other
from tracer.compare.check.forwardargs import LESSON, Mask
from tracer.compare.check.lessons import GENERATION, Spec
from tracer.compare.check.model import Role
from tracer.errors import InputError
from tracer.message import Message


def differs(build: Callable[[dict[str, Any]], Any], spec: Spec) -> tuple[Message, Message] | None:
    """``(sizes, what went wrong)`` when a module rebuilt at :func:`.resize.builds`' sizes is not the lesson."""
    return resize.judge(spec, gather(build, spec))


def gather(build: Callable[[dict[str, Any]], Any], spec: Spec, mask: Mask = LESSON, pairs: bool = False) -> list[Other]:
    """The student's half: each second build made with ``build(sizes)``, its weights found, called (:func:`_one`).

    A mask it requires is given in the form chosen at the lesson's sizes
    (``mask``, :mod:`.maskforms`).  ``pairs``: the module turns its queries
    and keys pair by pair (it takes rotary tables), so sizes with an odd head
    width are not ones it can take: its build starts at the fallback sizes.

    Only data comes back (:class:`Other`); :func:`judge` compares it with the
    lesson computed from those weights on inputs of its own.
    """
    return [_first_taken(build, spec, sized, mask, pairs) for sized in resize.alternatives(spec)]


def _first_taken(
    build: Callable[[dict[str, Any]], Any],
    spec: Spec,
    sized: tuple[dict[str, Any], ...],
    mask: Mask,
    pairs: bool = False,
) -> Other:
    """The build at the first of ``sized`` that the module takes (built and called without failing), or the first's.

    ``Other.tried`` says which sizes were used, so the judge computes the
    lesson at the same ones.  With ``pairs``, sizes of an odd head width are
    passed over (unless they are the last): code that turns pairs cannot
    take them, and may compute something else there without failing.
    """
    first: Other | None = None
    for n, got in enumerate(sized):
        if pairs and n < len(sized) - 1 and _odd(spec, got):
            continue
        other = _one(build, spec, got, mask)
        other.tried = n
        if first is not None:
            other.first = resize.failure(spec, first)
        if resize.failure(spec, other) is None:
            return other
        first = first or other
    assert first is not None
    return first


def _odd(spec: Spec, got: dict[str, Any]) -> bool:
    """True when the sizes ``got`` give each head an odd width (one a rotation of pairs cannot take)."""
    if "d_out" not in got:
        return False
    heads = int(got.get("num_heads", 1)) if spec.multi else 1
    return bool((got["d_out"] // max(heads, 1)) % 2)


def _one(build: Callable[[dict[str, Any]], Any], spec: Spec, got: dict[str, Any], mask: Mask) -> Other:
    try:
        module = build(got)
    except student.StudentError as e:
        return Other(Message("resize.building_raised", error=e.crash))
    except InputError as e:
        return Other(Message("resize.cannot_build", problem=_said(e)))
    x = resize.inputs(spec, got)
    convention.materialise(module, spec, resize.SEED, got)  # lazy layers get their shapes from one call
    try:
        found = _roles(module, spec, got)
    except InputError as e:
        return Other(Message("resize.weights_unfit", problem=_said(e)))
    module.eval()
    if spec.driver == GENERATION:
        further = spanargs.spans(module, spec, got["d_out"], got.get("num_heads"))
        return Other(None, found, {"eval": _generated(module, x, got["calls"], further)})
    results: dict[str, np.ndarray | Message] = {}
    try:
        heads, window = got.get("num_heads"), got.get("window_size")  # its further arguments, at the new sizes
        given = forwardargs.bind(module, spec, got["d_out"], mask, heads, window)[0]
    except InputError as e:  # a factory that builds another forward at these sizes
        return Other(Message("resize.cannot_build", problem=_said(e)))
    for mode in resize.modes(spec):
        module.train(mode == "train")
        run = student.call(module, x, resize.SEED, given)
        out = student.returned(run.output)
        if run.error is not None:
            results[mode] = Message("resize.raised", error=run.error.cause)
        elif not isinstance(out, torch.Tensor) or not out.is_floating_point():
            results[mode] = Message("resize.returned", type=type(out).__name__)
        else:
            results[mode] = out.detach().to(torch.float64).numpy().copy()
    module.eval()
    return Other(None, found, results)


def _said(e: InputError) -> Message | str:
    """What an error of ours says, as a message when it carries one."""
    return e.said or str(e)


def gather_function(fn: Any, spec: Spec) -> list[Other]:
    """A function of q, k, v: ``fn`` called once more at the lesson's other sizes (one result, or what went wrong)."""
    got = resize.builds(spec)[0]
    q, k, v = resize.inputs(spec, got)
    value: np.ndarray | Message
    try:
        value = flashcheck.called(fn, q, k, v, got["block_size"])
    except student.StudentError as e:
        value = Message("resize.it_raised", error=e.cause)
    except InputError:
        value = resize.NO_TENSOR
    return [Other(None, {}, {"eval": value})]


def _generated(
    module: torch.nn.Module,
    x: torch.Tensor,
    spans: tuple[tuple[int, int], ...],
    further: spanargs.Span | None = None,
) -> np.ndarray | Message:
    """The context rows of every call of ``spans`` joined along the tokens, or what went wrong."""
    try:
        calls = generation.generate(module, x, generation.convention(module), resize.SEED, spans, further)
    except student.StudentError as e:  # the reset crashed, or a call returned no float tensor
        reset = e.message.args.get("who") == Message("trouble.the_reset")
        return Message("resize.reset_raised", error=e.cause) if reset else resize.NO_TENSOR
    for (a, b), call in zip(spans, calls, strict=False):
        if call.error is not None:
            return Message("resize.call_raised", a=a, b=b, error=call.error.cause)
    try:
        return np.concatenate([c.out for c in calls if c.out is not None], axis=-2)
    except ValueError:  # results of other widths or ranks than each other's
        return Message("resize.not_joined")


def _roles(module: torch.nn.Module, spec: Spec, got: dict[str, Any]) -> dict[str, Role]:
    heads_n = got.get("num_heads", spec.heads)
    heads = wrapper.heads_of(module, heads_n) if spec.multi else None
    if heads is not None:
        found = wrapper.assign(heads[0], heads[1], got["d_in"], got["d_out"])
        found.update(wrapper.out_proj(module, heads[0], found["W_query"].value.shape[-1] * heads_n))
        return {"form": Role("form", "wrap", Message("how.none")), **found}
    found = roles.assign(module, got["d_in"], got["d_out"], out_proj=spec.multi, grouped=spec.grouped)
    if not spec.multi:  # the same output projection as at the lesson's sizes: the identity
        found.update(build.identity_projection(module, found, spec))
    return found
