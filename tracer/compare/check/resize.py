"""Second builds with other sizes: a module that hard-codes its sizes matches only at the lesson's own.

A module that writes ``nn.Dropout(0.5)``, a ``6 x 6`` mask, ``nn.Linear(3, 2)``
or ``window = 3`` instead of using its constructor's arguments computes the
lesson exactly at the lesson's sizes.  So once the stages match,
:func:`.resizegather.differs` builds the module again at each of
:func:`builds`' sizes (``d_in + 1``, wider outputs, ``context_length = 9``,
``dropout = 0``, other windows, heads and groups), calls it on seeded random inputs shorter than
the context (so the mask must be cut), and compares the result with the
lesson computed in float64 from that module's own weights
(the lesson's ``at_size``).  A module the lesson drives through a generation
is driven through a longer one (the sizes' ``calls``), call by call, as
:mod:`.generation` drives it; a function of queries, keys and values is
called with another block size, head width and sequence length.  Each
lesson says its sizes in its check description (``rebuilds``), and whether
the module is also called in training mode (``trained``).  The answer is a
message saying what went wrong (keys ``resize.*`` of the message tables), or
None.  Here are the sizes and the judge's half; the builds and calls, which
run the student's code, are :mod:`.resizegather`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tracer.compare.check import (
    align,
    rebuild,
    resizeref,
)
from tracer.compare.check.context import Hit
from tracer.compare.check.evidence import MODES, Malformed, Other
from tracer.compare.check.lessons import GENERATION, QKV, Spec
from tracer.compare.check.model import Role
from tracer.message import Message

SEED = 7
NO_TENSOR = Message("resize.no_tensor")
MODE = {"eval": Message("resize.eval"), "train": Message("resize.train")}
"""A mode's name in ``in eval mode it …``."""


def builds(spec: Spec) -> tuple[dict[str, Any], ...]:
    """The second builds' sizes by the book's names, and ``tokens``: the lesson's own ``rebuilds`` (none without)."""
    return spec.rebuilds(spec) if spec.rebuilds is not None else ()


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
        out.append((first, {**first, **rebuild.widths(spec, width * heads)}))
    return tuple(out)


def sizes(spec: Spec) -> dict[str, Any]:
    """The first second build's sizes (:func:`builds`)."""
    return builds(spec)[0]


def describe(spec: Spec, got: dict[str, Any]) -> Message:
    """``d_in=4, d_out=3, context_length=9, dropout=0.0, 7 tokens`` (only the lesson's own arguments)."""
    if spec.driver == QKV:
        return Message("resize.sizes", names=f"d={got['d']}, block_size={got['block_size']}", tokens=got["tokens"])
    names = ("d_in", "d_out", "context_length", "dropout", "num_heads", "num_kv_groups", "window_size")
    said = ", ".join(f"{n}={got[n]}" for n in names if n in spec.signature)
    if "calls" in got:
        return Message("resize.sizes_calls", names=said, tokens=got["tokens"], calls=len(got["calls"]))
    return Message("resize.sizes", names=said, tokens=got["tokens"])


def hit(spec: Spec, others: list[Other]) -> Hit | None:
    """``sizes_ignored``, its details the sizes and what went wrong, when :func:`judge` finds a difference."""
    other = judge(spec, others)
    if other is None:
        return None
    return Hit(None, (), {"sizes": other[0], "detail": other[1]}, "sizes_ignored")


def failure(spec: Spec, other: Other) -> Message | None:
    """What went wrong building or calling the module at a second build's sizes (None: it was built and called)."""
    if other.problem is not None:
        return other.problem
    for mode in modes(spec):
        value = other.results.get(mode, Message("resize.returned_nothing"))
        if isinstance(value, Message):
            if spec.driver in (QKV, GENERATION):  # one way of calling: no mode to name
                return value
            return Message("resize.in_mode", mode=MODE[mode], what=value)
    return None


def judge(spec: Spec, others: list[Other]) -> tuple[Message, Message] | None:
    """The judge's half: each second build's results against the lesson computed here from its weights."""
    sized = alternatives(spec)
    if len(others) != len(sized):
        raise Malformed(Message("check.second_builds_were_expected", n_sized=len(sized), n_others=len(others)))
    for tries, other in zip(sized, others, strict=True):
        if not 0 <= other.tried < len(tries):
            raise Malformed(Message("check.second_build_names_sizes", tried=other.tried, n_tries=len(tries)))
        found = _judged(spec, tries[other.tried], other)
        if found is not None and other.tried:  # wrong at the fallback too: what the first sizes did is the verdict
            return describe(spec, tries[0]), other.first or found
        if found is not None:
            return describe(spec, tries[0]), found
    return None


def _judged(spec: Spec, got: dict[str, Any], other: Other) -> Message | None:
    failed = failure(spec, other)
    if failed is not None:
        return failed
    try:
        want = _want(spec, got, other.roles)
    except (KeyError, ValueError, IndexError) as e:  # weights that do not fit the sizes asked for
        return Message("resize.weights_unfit", problem=type(e).__name__)
    for mode in modes(spec):
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
    """The lesson's result at the sizes ``got``, from the weights ``found`` (the book's wrapper: head by head)."""
    x = inputs(spec, got).to(torch.float64).numpy()
    if "form" in found:
        return resizeref.wrapped(found, x, spec.causal)
    assert spec.at_size is not None  # a lesson with second builds says what they compute
    return spec.at_size(spec, got, found, x)


def modes(spec: Spec) -> tuple[str, ...]:
    return MODES if spec.trained else ("eval",)


def inputs(spec: Spec, got: dict[str, Any]) -> torch.Tensor:
    """Seeded inputs at the sizes ``got``: queries, keys and values spread wide (the running max rises), or tokens."""
    g = torch.Generator().manual_seed(SEED)
    if spec.driver == QKV:
        return torch.randn((3, got["tokens"], got["d"]), generator=g, dtype=torch.float32)
    shape = (2, got["tokens"], got["d_in"]) if spec.batch else (got["tokens"], got["d_in"])
    return torch.rand(shape, generator=g, dtype=torch.float32)
