"""Second builds with other sizes: a module that hard-codes its sizes matches only at the lesson's own.

A module that writes ``nn.Dropout(0.5)``, a ``6 x 6`` mask, ``nn.Linear(3, 2)``
or ``window = 3`` instead of using its constructor's arguments computes the
lesson exactly at the lesson's sizes.  So once the stages match,
:func:`differs` builds the module again at each of :func:`builds`' sizes
(``d_in + 1``, wider outputs, ``context_length = 9``, ``dropout = 0``, other
windows, heads and groups), calls it on seeded random inputs shorter than
the context (so the mask must be cut), and compares the result with the
lesson computed in float64 from that module's own weights
(:mod:`.resizeref`).  Lesson ``kvcache``'s module is driven through a longer
generation, call by call, as :mod:`.generation` drives it; lesson
``flash``'s function is called with another block size, head width and
sequence length.  The answer is a message saying what went wrong (keys
``resize.*`` of the message tables), or None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tracer.compare.check import (
    align,
    flashcheck,
    forwardargs,
    generation,
    resizeref,
    roles,
    student,
    wrapper,
)
from tracer.compare.check.context import Hit
from tracer.compare.check.evidence import MODES, Malformed, Other
from tracer.compare.check.forwardargs import LESSON, Mask
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Role
from tracer.errors import InputError
from tracer.message import Message

CONTEXT = 9
TOKENS = 7
SEED = 7
CALLS = ((1, 3), (4, 4), (5, 5), (6, 6), (7, 8))
"""Lesson kvcache's second generation: 8 tokens, a prompt of three, three single tokens, then two at once."""
FLASH = {"d": 3, "block_size": 3, "tokens": 8}
"""Lesson flash's other call: 3-wide heads, blocks of 3 keys over 8 tokens (the last block holds two)."""


MODELLED = ("trainable", "causal", "multihead", "rope", "window", "gqa", "flash", "kvcache")
"""The lessons whose result :mod:`.resizeref` computes at other sizes (every lesson with sizes; not ``simple``).

Lesson ``rope`` is rebuilt two components wider (RoPE turns pairs, so the
width stays even) and its queries and keys are turned as the checked
pairing turns them (``--rope-style``), from position 0, ``θ_p = 10000^(−2(p−1)/d)``
at the new width: a frequency table or a rotation written for ``d_out = 4``
shows here.  Lesson ``window`` is built twice, with the window one narrower
(on 7 tokens) and one wider (on 9, the whole context); lesson ``gqa`` twice,
with one group more (as many query heads per group) and with one group
(multi-query attention, one head fewer), heads one component wider.
Lesson ``kvcache`` generates :data:`CALLS` with ``d_out + 1``; lesson
``flash`` is called with :data:`FLASH`.  Lessons ``trainable``, ``causal``,
``multihead`` and ``rope`` are called in eval and in training mode (with
``dropout = 0`` both must give the lesson's result), the others in eval mode.
"""

NO_TENSOR = Message("resize.no_tensor")
MODE = {"eval": Message("resize.eval"), "train": Message("resize.train")}
"""A mode's name in ``in eval mode it …``."""

TRAINED = ("trainable", "causal", "multihead", "rope")
"""The lessons whose second build is also called in training mode."""


def builds(spec: Spec) -> tuple[dict[str, Any], ...]:
    """The second builds' sizes by the book's names, and ``tokens`` (a square module's ``d_in`` follows ``d_out``)."""
    if spec.name == "flash":
        return (dict(FLASH),)
    d_out = spec.d_out + (2 if spec.name == "rope" else spec.heads)  # RoPE's pairs need an even width
    base = {"context_length": CONTEXT, "dropout": 0.0, "num_heads": spec.heads, "tokens": TOKENS}
    if spec.name == "window":
        w = spec.args[3]
        sized = [{**base, "window_size": n, "tokens": t} for n, t in ((w - 1, TOKENS), (w + 1, CONTEXT)) if n >= 1]
        return tuple({**_widths(spec, d_out), **s} for s in sized)
    if spec.name == "gqa":
        groups, width = spec.args[-1], spec.head_dim + 1
        share = spec.heads // groups
        pairs = ((groups + 1) * share, groups + 1), (max(spec.heads - 1, 1), 1)  # one group more; multi-query
        return tuple({**_widths(spec, h * width), **base, "num_heads": h, "num_kv_groups": g} for h, g in pairs)
    if spec.name == "kvcache":
        return ({**_widths(spec, spec.d_out + 1), **base, "tokens": CALLS[-1][1]},)
    return ({**_widths(spec, d_out), **base},)


def alternatives(spec: Spec) -> tuple[tuple[dict[str, Any], ...], ...]:
    """Each second build of :func:`builds`, then the same build with wider, even heads: sizes to fall back on.

    The first sizes make each head one component wider than the lesson's
    (an odd width for most lessons), which a module that hard-codes its
    width cannot hide.  But a correct module may not take them: one that
    rotates pairs per head needs an even head width, one with heads of its
    own (a default ``num_heads``) a width they divide.  So when a build at
    the first sizes fails (it cannot be built, or it raises), the module is
    built again with each head ``2·d_head`` wide (``4·d_head`` where that
    would be the first sizes' width): even, and divisible wherever the
    lesson's width was.  A module that ignores its sizes fails there too;
    only then is the first failure its verdict.  A function called at
    sizes of its own (lesson flash) has no width to fall back on.
    """
    out: list[tuple[dict[str, Any], ...]] = []
    for first in builds(spec):
        if "d_out" not in first:
            out.append((first,))
            continue
        heads = int(first.get("num_heads", 1)) if spec.multi else 1
        width = 2 * spec.head_dim
        if width * heads == first["d_out"]:
            width *= 2
        out.append((first, {**first, **_widths(spec, width * heads)}))
    return tuple(out)


def sizes(spec: Spec) -> dict[str, Any]:
    """The first second build's sizes (:func:`builds`)."""
    return builds(spec)[0]


def _widths(spec: Spec, d_out: int) -> dict[str, int]:
    return {"d_in": d_out if spec.d_in == spec.d_out else spec.d_in + 1, "d_out": d_out}


def describe(spec: Spec, got: dict[str, Any]) -> Message:
    """``d_in=4, d_out=3, context_length=9, dropout=0.0, 7 tokens`` (only the lesson's own arguments)."""
    if spec.name == "flash":
        return Message("resize.sizes", names=f"d={got['d']}, block_size={got['block_size']}", tokens=got["tokens"])
    names = ("d_in", "d_out", "context_length", "dropout", "num_heads", "num_kv_groups", "window_size")
    said = ", ".join(f"{n}={got[n]}" for n in names if n in spec.signature)
    if spec.name == "kvcache":
        return Message("resize.sizes_calls", names=said, tokens=got["tokens"], calls=len(CALLS))
    return Message("resize.sizes", names=said, tokens=got["tokens"])


def differs(build: Callable[[dict[str, Any]], Any], spec: Spec) -> tuple[Message, Message] | None:
    """``(sizes, what went wrong)`` when a module rebuilt at :func:`builds`' sizes does not compute the lesson."""
    return judge(spec, gather(build, spec))


def hit(spec: Spec, others: list[Other]) -> Hit | None:
    """``sizes_ignored``, its details the sizes and what went wrong, when :func:`judge` finds a difference."""
    other = judge(spec, others)
    if other is None:
        return None
    return Hit(None, (), {"sizes": other[0], "detail": other[1]}, "sizes_ignored")


def gather(build: Callable[[dict[str, Any]], Any], spec: Spec, mask: Mask = LESSON) -> list[Other]:
    """The student's half: each second build made with ``build(sizes)``, its weights found, called (:func:`_one`).

    A mask it requires is given in the form chosen at the lesson's sizes
    (``mask``, :mod:`.maskforms`).

    Only data comes back (:class:`Other`); :func:`judge` compares it with the
    lesson computed from those weights on inputs of its own.
    """
    return [_first_taken(build, spec, sized, mask) for sized in alternatives(spec)]


def _first_taken(
    build: Callable[[dict[str, Any]], Any], spec: Spec, sized: tuple[dict[str, Any], ...], mask: Mask
) -> Other:
    """The build at the first of ``sized`` that the module takes (built and called without failing), or the first's.

    ``Other.tried`` says which sizes were used, so the judge computes the
    lesson at the same ones.
    """
    first: Other | None = None
    for n, got in enumerate(sized):
        other = _one(build, spec, got, mask)
        other.tried = n
        if first is not None:
            other.first = _failure(spec, first)
        if _failure(spec, other) is None:
            return other
        first = first or other
    assert first is not None
    return first


def _failure(spec: Spec, other: Other) -> Message | None:
    """What went wrong building or calling the module at a second build's sizes (None: it was built and called)."""
    if other.problem is not None:
        return other.problem
    for mode in _modes(spec):
        value = other.results.get(mode, Message("resize.returned_nothing"))
        if isinstance(value, Message):
            if spec.name in ("flash", "kvcache"):
                return value
            return Message("resize.in_mode", mode=MODE[mode], what=value)
    return None


def _one(build: Callable[[dict[str, Any]], Any], spec: Spec, got: dict[str, Any], mask: Mask) -> Other:
    try:
        module = build(got)
    except student.StudentError as e:
        return Other(Message("resize.building_raised", error=e.crash))
    except InputError as e:
        return Other(Message("resize.cannot_build", problem=_said(e)))
    x = _inputs(spec, got)
    try:
        found = _roles(module, spec, got)
    except InputError as e:
        return Other(Message("resize.weights_unfit", problem=_said(e)))
    module.eval()
    if spec.name == "kvcache":
        return Other(None, found, {"eval": _generated(module, x)})
    results: dict[str, np.ndarray | Message] = {}
    try:
        given = forwardargs.bind(module, spec, got["d_out"], mask)[0]  # its further arguments, made at the new sizes
    except InputError as e:  # a factory that builds another forward at these sizes
        return Other(Message("resize.cannot_build", problem=_said(e)))
    for mode in _modes(spec):
        module.train(mode == "train")
        run = student.call(module, x, SEED, given)
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


def gather_function(fn: Any) -> list[Other]:
    """Lesson flash's student half: ``fn`` called once more at :data:`FLASH` (one result, or what went wrong)."""
    q, k, v = _qkv()
    value: np.ndarray | Message
    try:
        value = flashcheck.called(fn, q, k, v, FLASH["block_size"])
    except student.StudentError as e:
        value = Message("resize.it_raised", error=e.cause)
    except InputError:
        value = NO_TENSOR
    return [Other(None, {}, {"eval": value})]


def _generated(module: torch.nn.Module, x: torch.Tensor) -> np.ndarray | Message:
    """The context rows of every call of :data:`CALLS` joined along the tokens, or what went wrong."""
    try:
        calls = generation.generate(module, x, generation.convention(module), SEED, CALLS)
    except student.StudentError as e:  # the reset crashed, or a call returned no float tensor
        reset = e.message.args.get("who") == Message("trouble.the_reset")
        return Message("resize.reset_raised", error=e.cause) if reset else NO_TENSOR
    for (a, b), call in zip(CALLS, calls, strict=False):
        if call.error is not None:
            return Message("resize.call_raised", a=a, b=b, error=call.error.cause)
    try:
        return np.concatenate([c.out for c in calls if c.out is not None], axis=-2)
    except ValueError:  # results of other widths or ranks than each other's
        return Message("resize.not_joined")


def judge(spec: Spec, others: list[Other]) -> tuple[Message, Message] | None:
    """The judge's half: each second build's results against the lesson computed here from its weights."""
    sized = alternatives(spec)
    if len(others) != len(sized):
        raise Malformed(f"{len(sized)} second builds were expected, got {len(others)}")
    for tries, other in zip(sized, others, strict=True):
        if not 0 <= other.tried < len(tries):
            raise Malformed(f"a second build names sizes {other.tried} of {len(tries)}")
        found = _judged(spec, tries[other.tried], other)
        if found is not None and other.tried:  # wrong at the fallback too: what the first sizes did is the verdict
            return describe(spec, tries[0]), other.first or found
        if found is not None:
            return describe(spec, tries[0]), found
    return None


def _judged(spec: Spec, got: dict[str, Any], other: Other) -> Message | None:
    failed = _failure(spec, other)
    if failed is not None:
        return failed
    try:
        want = _want(spec, got, other.roles)
    except (KeyError, ValueError, IndexError) as e:  # weights that do not fit the sizes asked for
        return Message("resize.weights_unfit", problem=type(e).__name__)
    for mode in _modes(spec):
        value = other.results[mode]
        assert not isinstance(value, Message)  # a failure, said above
        if value.shape != want.shape:
            return Message("resize.shape", shape=str(tuple(value.shape)), want=str(tuple(want.shape)))
        if not align.close(value, want):
            err = align.error(value, want)
            if mode == "train":
                return Message("resize.fixed_dropout", err=float(err))
            return Message("resize.differs", err=float(err))
    return None


def _want(spec: Spec, got: dict[str, Any], found: dict[str, Role]) -> np.ndarray:
    if spec.name == "flash":
        q, k, v = (t.to(torch.float64).numpy() for t in _qkv())
        return resizeref.attend(q, k, v, True)
    x = _inputs(spec, got).to(torch.float64).numpy()
    return resizeref.result(spec.name, found, x, got, spec.style)


def _modes(spec: Spec) -> tuple[str, ...]:
    return MODES if spec.name in TRAINED else ("eval",)


def _inputs(spec: Spec, got: dict[str, Any]) -> torch.Tensor:
    g = torch.Generator().manual_seed(SEED)
    shape = (2, got["tokens"], got["d_in"]) if spec.batch else (got["tokens"], got["d_in"])
    return torch.rand(shape, generator=g, dtype=torch.float32)


def _qkv() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Lesson flash's other queries, keys and values: seeded, spread wide enough that the running max rises."""
    g = torch.Generator().manual_seed(SEED)
    q, k, v = torch.randn((3, FLASH["tokens"], FLASH["d"]), generator=g, dtype=torch.float32)
    return q, k, v


def _roles(module: torch.nn.Module, spec: Spec, got: dict[str, Any]) -> dict[str, Role]:
    heads_n = got.get("num_heads", spec.heads)
    heads = wrapper.heads_of(module, heads_n) if spec.multi else None
    if heads is not None:
        found = wrapper.assign(heads[0], heads[1], got["d_in"], got["d_out"])
        found.update(wrapper.out_proj(module, heads[0], found["W_query"].value.shape[-1] * heads_n))
        return {"form": Role("form", "wrap", Message("how.none")), **found}
    return roles.assign(module, got["d_in"], got["d_out"], out_proj=spec.multi, grouped=spec.grouped)
