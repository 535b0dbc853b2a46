"""A lesson's entry of the table at other sizes, or in the form the student wrote it.

:func:`sized` is the lesson at the sizes a teacher asks for (``--d-out``,
``--d-in``, ``--heads``), refused in one line where the lesson cannot take
them; :func:`wrapped` is lesson ``multihead`` when the student wrote the
book's wrapper of causal heads, whose quantities are the lesson's wrapper
form (``wrap.*``) instead of its split heads.
"""

from __future__ import annotations

from dataclasses import replace

from tracer.compare.check.lessons import SPECS, Spec, qkv
from tracer.compare.check.model import Quantity as Q
from tracer.errors import InputError
from tracer.message import Message

WRAP = (
    *qkv("wrap."),
    Q("omega", "scores", "wrap.omega", True, "s"),
    Q("masked", "mask", "wrap.neg.omega", True, "s", after=("masked_scaled",)),
    Q("masked_scaled", "scaling", "wrap.neg.scaled", True, "s", after=("alpha",)),
    Q("alpha", "weights", "wrap.causal.alpha"),
    Q("z", "context", "wrap.z"),
    Q("concat", "merge", "wrap.concat"),
    Q("short", "mask", "wrap.concat", run="short"),
)
"""Lesson multihead's quantities when the student wrote the book's wrapper (a ModuleList of causal heads)."""

WRAP_OUT = (
    *WRAP[:-2],
    Q("concat", "merge", "wrap.concat", True, "o"),
    Q("proj", "output", "wrap.proj", True, "o"),
    Q("out", "output", "wrap.out", False, "o"),
    Q("short", "mask", "wrap.out", run="short"),
)
"""The wrapper's quantities when an output projection over all heads follows it (the book's bonus wrapper)."""


def wrapped(spec: Spec, width: int, out: bool = False) -> Spec:
    """``spec`` for a wrapper of heads each ``width`` wide, d_out = heads x width (``out``: a projection follows)."""
    return replace(spec, d_out=spec.heads * width, quantities=WRAP_OUT if out else WRAP, form="wrap")


def sized(spec: Spec, d_out: int | None = None, d_in: int | None = None, heads: int | None = None) -> Spec:
    """``spec`` with the module built ``d_out`` wide for embeddings ``d_in`` wide, with ``heads`` heads.

    ``heads`` is the constructor's ``num_heads`` (lessons ``multihead`` and
    ``gqa``; for ``gqa`` a multiple of its key/value groups); ``d_out``
    stays the lesson's unless given, and must split into the heads.
    """
    if not spec.is_class:
        raise InputError(Message("check.lesson_no_d_or", name=spec.name))
    args = list(spec.args)
    if heads is not None:
        if "num_heads" not in spec.signature:
            headed = ", ".join(n for n, s in SPECS.items() if s.multi)
            raise InputError(Message("check.lesson_one_head_heads", name=spec.name, headed=headed))
        if heads < 1 or heads > MAX_HEADS:
            raise InputError(Message("check.heads_must_between", max_heads=MAX_HEADS, heads=heads))
        groups = args[spec.signature.index("num_kv_groups")] if spec.grouped else 1
        if heads % groups:
            raise InputError(Message("check.heads_must_multiple_lesson", name=spec.name, groups=groups, heads=heads))
        args[spec.signature.index("num_heads")] = heads
    count = spec.heads if heads is None else heads
    d_out = spec.d_out if d_out is None else d_out
    d_in = spec.d_in if d_in is None else d_in
    if d_out < 1 or d_out % count:
        said = "the lesson's " if heads is None else ""
        raise InputError(Message("check.d_out_must_positive", said=said, count=count, d_out=d_out))
    if d_in < 1 or d_in > MAX_WIDTH:
        raise InputError(Message("check.d_must_between", max_width=MAX_WIDTH, d_in=d_in))
    return replace(spec, d_in=d_in, d_out=d_out, heads=count, args=(d_in, d_out, *args[2:]))


def squared(spec: Spec, square: bool) -> Spec:
    """``spec`` built with ``d_in = d_out`` when ``square`` (a module of one width), else ``spec`` itself."""
    return sized(spec, spec.d_out, spec.d_out) if square and spec.is_class else spec


MAX_HEADS = 64


MAX_WIDTH = 512
"""The widest embeddings a check makes up (a module of a real model's width is checked at a small one)."""
