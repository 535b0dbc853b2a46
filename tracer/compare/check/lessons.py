"""What each lesson asks of a student's code, and the lesson's reference computed with the student's weights.

Per lesson: the constructor the book's reader writes (``docs/check.md``), the
sizes and seed it is built with, the input it is called on, and the lesson's
quantities in the order the lesson computes them.  The reference is the
lesson's own pipeline (``tracer.record.pipelines``) run with the student's
weights in place of the lesson's, so a different initialisation is never a
mistake.

Lesson ``multihead`` is checked with ``d_out = 8`` (the lesson's ``--d-out``
option) and two heads: with the lesson's default ``d_out = 2`` each head is
one number wide, ``sqrt(d_k) = 1`` and a scaling mistake would change nothing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from tracer.compare.check.model import Quantity, Role
from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.record.inputs import tutorial
from tracer.record.pipelines import LESSONS

Q = Quantity


@dataclass(frozen=True)
class Spec:
    """One lesson as the check sees it."""

    name: str
    signature: tuple[str, ...]  # the constructor's parameters as the book names them
    args: tuple[Any, ...]  # the values passed, positionally, in that order
    seed: int
    d_in: int
    d_out: int
    heads: int
    batch: bool  # called on torch.stack((inputs, inputs)) rather than on inputs
    quantities: tuple[Quantity, ...]
    short: int = 0  # tokens of a shorter sequence whose result must be the first rows of the full one (0: none)
    dropout: float = 0.0  # p of the train-mode run (0: no train-mode run)
    form: str = ""  # lesson multihead: "wrap" when the student's module is the book's wrapper of heads
    block: int = 0  # lesson flash: the second block size it is called with (one that does not divide T)
    style: str = ""  # lesson rope: the pairing the student's code should use, "half" or "interleaved"

    @property
    def is_class(self) -> bool:
        """True when the student gives a module class (every lesson but ``simple``)."""
        return self.name != "simple"

    @property
    def multi(self) -> bool:
        """True for the lessons whose module takes ``num_heads`` (multihead, gqa), whatever their number."""
        return "num_heads" in self.signature

    @property
    def head_dim(self) -> int:
        """d_k of one head."""
        return self.d_out // self.heads


def _qkv(pre: str, optional: bool = False, group: str = "") -> tuple[Quantity, ...]:
    return tuple(Q(n, "projections", f"{pre}{n}", optional, group) for n in ("q", "k", "v"))


SPECS: dict[str, Spec] = {
    "simple": Spec(
        "simple",
        ("inputs",),
        (),
        123,
        3,
        3,
        1,
        False,
        (Q("omega", "scores", "omega"), Q("alpha", "weights", "alpha"), Q("z", "context", "z")),
    ),
    "trainable": Spec(
        "trainable",
        ("d_in", "d_out"),
        (3, 2),
        123,
        3,
        2,
        1,
        False,
        (
            *_qkv(""),
            Q("omega", "scores", "omega", True, "s"),
            Q("scaled", "scaling", "scaled", False, "s"),
            Q("alpha", "weights", "alpha"),
            Q("z", "context", "z"),
        ),
    ),
    "causal": Spec(
        "causal",
        ("d_in", "d_out", "context_length", "dropout"),
        (3, 2, 6, 0.5),
        123,
        3,
        2,
        1,
        True,
        (
            *_qkv("batch."),
            Q("omega", "scores", "batch.omega", True, "s"),
            Q("masked", "mask", "batch.neg.omega", True, "s", after=("masked_scaled",)),
            Q("scaled", "scaling", "scaled", True, "s", after=("masked_scaled",)),
            Q("masked_scaled", "scaling", "batch.neg.scaled", True, "s", after=("alpha",)),
            Q("alpha", "weights", "batch.causal.alpha"),
            Q("dropped", "dropout", "dropout.alpha", run="train"),
            Q("z", "context", "batch.z"),
            Q("short", "mask", "batch.z", run="short"),
        ),
        short=4,
        dropout=0.5,
    ),
    "multihead": Spec(
        "multihead",
        ("d_in", "d_out", "context_length", "dropout", "num_heads"),
        (3, 8, 6, 0.5, 2),
        123,
        3,
        8,
        2,
        True,
        (
            *_qkv("split.", True, "p"),
            *(Q(f"h{n}", "heads", f"split.h{n}", False, "p") for n in ("q", "k", "v")),
            Q("omega", "scores", "split.omega", True, "s"),
            Q("masked", "mask", "split.neg.omega", True, "s"),
            Q("masked_scaled", "scaling", "split.neg.scaled", True, "s", after=("alpha",)),
            Q("alpha", "weights", "split.causal.alpha"),
            Q("z", "context", "split.z"),
            Q("concat", "merge", "split.concat", True, "o"),
            Q("proj", "output", "split.proj", True, "o"),
            Q("out", "output", "split.out", False, "o"),
            Q("short", "mask", "split.out", run="short"),
        ),
        short=4,
        dropout=0.5,
    ),
    "window": Spec(
        "window",
        ("d_in", "d_out", "context_length", "window_size"),
        (3, 2, 6, 3),
        123,
        3,
        2,
        1,
        True,
        (
            *_qkv(""),
            Q("omega", "scores", "omega", True, "s"),
            Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
            Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
            Q("alpha", "weights", "window.alpha"),
            Q("z", "context", "z"),
            Q("short", "mask", "z", run="short"),
        ),
        short=4,
    ),
    "gqa": Spec(
        "gqa",
        ("d_in", "d_out", "context_length", "num_heads", "num_kv_groups"),
        (3, 8, 6, 4, 2),
        123,
        3,
        8,
        4,
        True,
        (
            *_qkv(""),
            Q("hq", "heads", "hq", True, "h", after=("alpha",)),
            Q("hk", "heads", "hk"),
            Q("hv", "heads", "hv"),
            Q("kh", "heads", "kh", True, "h", after=("alpha",)),
            Q("vh", "heads", "vh", True, "h", after=("z",)),
            Q("omega", "scores", "omega", True, "s"),
            Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
            Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
            Q("alpha", "weights", "causal.alpha"),
            Q("z", "context", "z"),
            Q("concat", "merge", "concat", True, "o"),
            Q("out", "output", "out", False, "o"),
            Q("short", "mask", "out", run="short"),
        ),
        short=4,
    ),
    "rope": Spec(
        "rope",
        ("d_in", "d_out", "context_length"),
        (3, 4, 6),
        123,
        3,
        4,
        1,
        True,
        (
            *_qkv(""),
            Q("q_rot", "rope", "rope.q"),
            Q("k_rot", "rope", "rope.k"),
            Q("omega", "scores", "omega", True, "s"),
            Q("masked", "mask", "neg.omega", True, "s", after=("masked_scaled",)),
            Q("masked_scaled", "scaling", "neg.scaled", True, "s", after=("alpha",)),
            Q("alpha", "weights", "causal.alpha"),
            Q("z", "context", "z"),
            Q("short", "mask", "z", run="short"),
        ),
        short=4,
        style="half",
    ),
    "kvcache": Spec(
        "kvcache",
        ("d_in", "d_out", "context_length"),
        (3, 2, 6),
        123,
        3,
        2,
        1,
        True,
        (),  # every call's context rows: tracer.compare.check.generation drives the generation
    ),
}
SPECS["flash"] = Spec(
    "flash",
    ("q", "k", "v", "block_size"),
    (2,),
    789,
    3,
    2,
    1,
    False,
    (
        Q("z", "context", "flash.z"),
        Q("z", "context", "flash.z", run="block"),
        Q("short", "context", "flash.z", run="short"),
    ),
    short=5,
    block=4,
)
"""Lesson flash checks a function of queries, keys and values (:mod:`.flashcheck`), not a module."""
SPECS["rope-interleaved"] = replace(SPECS["rope"], style="interleaved")
"""Lesson rope checked with the interleaved pairing (``--rope-style interleaved``): the same lesson, other pairs."""


CALLS = ((1, 2), (3, 3), (4, 4), (5, 6))
"""Lesson kvcache's generation as the check drives it: the first and last token (1-based) of each call.

A prompt of two tokens, tokens 3 and 4 one at a time, then tokens 5 and 6 in
one call (a prompt fed in pieces, a draft being verified): a mask that is not
offset to the new tokens' positions shows on a single token, one sliced
``mask[:n, :n]`` only on a call of several (:mod:`.generation`).
"""


WRAP = (
    *_qkv("wrap."),
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
        raise InputError(f"lesson {spec.name} has no d_in or d_out: the inputs are used as they are")
    args = list(spec.args)
    if heads is not None:
        if "num_heads" not in spec.signature:
            raise InputError(f"lesson {spec.name} has one head: heads are for {', '.join(HEADED)}")
        if heads < 1 or heads > MAX_HEADS:
            raise InputError(f"heads must be between 1 and {MAX_HEADS}, got {heads}")
        groups = args[-1] if spec.name == "gqa" else 1
        if heads % groups:
            raise InputError(f"heads must be a multiple of lesson {spec.name}'s {groups} key/value groups, got {heads}")
        args[spec.signature.index("num_heads")] = heads
    count = spec.heads if heads is None else heads
    d_out = spec.d_out if d_out is None else d_out
    d_in = spec.d_in if d_in is None else d_in
    if d_out < 1 or d_out % count:
        said = "the lesson's " if heads is None else ""
        raise InputError(f"d_out must be a positive multiple of {said}{count} heads, got {d_out}")
    if d_in < 1 or d_in > MAX_WIDTH:
        raise InputError(f"d_in must be between 1 and {MAX_WIDTH}, got {d_in}")
    return replace(spec, d_in=d_in, d_out=d_out, heads=count, args=(d_in, d_out, *args[2:]))


HEADED = ("multihead", "gqa")
"""The lessons whose number of heads ``--heads`` chooses."""

MAX_HEADS = 64


MAX_WIDTH = 512
"""The widest embeddings a check makes up (a module of a real model's width is checked at a small one)."""


def embeddings(d_in: int) -> torch.Tensor:
    """The six tokens as ``d_in``-wide embeddings: the tutorial's where they fit, seeded ones beyond.

    For ``d_in <= 3`` the tutorial's first ``d_in`` columns; wider, its three
    columns then ``d_in - 3`` columns drawn from ``torch.rand`` under seed 123,
    rounded to two decimals as the tutorial's are.
    """
    x = torch.tensor(tutorial()[0], dtype=torch.float32)
    if d_in <= x.shape[1]:
        return x[:, :d_in].contiguous()
    g = torch.Generator().manual_seed(123)
    more = torch.round(torch.rand((x.shape[0], d_in - x.shape[1]), generator=g) * 100) / 100
    return torch.cat((x, more.to(torch.float32)), dim=1)


def inputs(spec: Spec) -> torch.Tensor:
    """The tensor the student's code is called on: the six tokens (twice, stacked, for a batch)."""
    x = embeddings(spec.d_in)
    return torch.stack((x, x)) if spec.batch else x


def _options(spec: Spec) -> dict[str, Any]:
    """The lesson options the reference is built with (lessons window, gqa and rope have their own)."""
    if spec.name == "window":
        return {"window": spec.args[3]}
    if spec.name == "gqa":
        return {"heads": spec.heads, "groups": spec.args[-1]}
    if spec.name == "rope":
        return {"style": spec.style}
    return {}


def reference(spec: Spec, roles: dict[str, Role]) -> Trace:
    """The lesson's trace, computed with the student's weights where the student has them."""
    module = importlib.import_module(LESSONS[spec.name][0])
    _, tokens = tutorial()
    x = embeddings(spec.d_in)
    meta = {"dtype": "float32", "n_tokens": x.shape[0], "dim": x.shape[1], "source": {"kind": "tutorial"}}
    if spec.name == "simple":
        trace: Trace = module.build(x, tokens, 2, torch.float32, meta)
        return trace
    w = {r: torch.tensor(roles[r].value, dtype=torch.float32) for r in ("W_query", "W_key", "W_value")}
    info = {"kind": "student", "d_out": spec.d_out}
    if spec.name == "trainable":
        trace = module.build(x, tokens, 2, torch.float32, meta, weights=w, weights_meta=info)
        return trace
    if spec.name == "multihead":  # any number of heads (the lesson's option is only d_out)
        extra = module.with_heads(x, spec.d_out, spec.heads)
    else:
        extra = module.prepare(x, d_out=spec.d_out, **_options(spec))
    if spec.form == "wrap":
        extra["wrap"] = w
        if "W_out" in roles:
            out = ("W_out", "b_out")
            extra["wrap_out"] = {r: torch.tensor(roles[r].value, dtype=torch.float32) for r in out if r in roles}
    elif spec.name == "causal":
        extra.update(weights=w, weights_meta=info, module=w)
    elif spec.name in ("window", "rope"):
        extra.update(weights=w, weights_meta=info)
    elif spec.name == "kvcache":
        extra.update(weights=w, weights_meta=info, spans=list(CALLS))
    elif spec.name == "gqa":
        extra["weights"] = {**extra["weights"], **w}
        if "W_out" in roles:
            extra["weights"]["W_out"] = torch.tensor(roles["W_out"].value, dtype=torch.float32)
    else:
        split = dict(extra["split"])
        split.update(w)
        if "W_out" in roles:
            split["W_out"] = torch.tensor(roles["W_out"].value, dtype=torch.float32)
            bias = roles["b_out"].value if "b_out" in roles else np.zeros(spec.d_out)
            split["b_out"] = torch.tensor(bias, dtype=torch.float32)
        extra["split"] = split
    trace = module.build(x, tokens, 2, torch.float32, meta, **extra)
    return trace
