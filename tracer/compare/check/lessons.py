"""What each lesson asks of a student's code: the table the whole check reads.

Per lesson: the constructor the book's reader writes (``docs/check.md``), the
sizes and seed it is built with, how it is called, and the lesson's
quantities in the order the lesson computes them.  The table is data; two
modules build on it: :mod:`.sizing` makes a lesson's entry at the sizes a
teacher asks for (``--d-out``, ``--heads``) or in the form the student wrote
(the book's wrapper of heads), and :mod:`.reference` makes the inputs the
student's code is called on and the lesson's own trace computed with the
student's weights.

Lesson ``multihead`` is checked with ``d_out = 8`` (the lesson's ``--d-out``
option) and two heads: with the lesson's default ``d_out = 2`` each head is
one number wide, ``sqrt(d_k) = 1`` and a scaling mistake would change nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tracer.compare.check.model import Quantity

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
    bias: bool = False  # the projections' biases are the module's own (no qkv_bias to turn them off): added

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


def qkv(pre: str, optional: bool = False, group: str = "") -> tuple[Quantity, ...]:
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
            *qkv(""),
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
            *qkv("batch."),
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
            *qkv("split.", True, "p"),
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
            *qkv(""),
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
            *qkv(""),
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
            *qkv(""),
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
