"""What a check works with and hands back: the student's tensors, the lesson's quantities, the verdict.

Everything here is plain data (numpy arrays, strings), so a result can be
written as JSON, rendered as text or HTML, or asserted on in a teacher's
pytest suite without torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tracer.message import Message

QKV = ("W_query", "W_key", "W_value")
"""The roles of the query, key and value projections."""
BIAS = {"W_query": "b_query", "W_key": "b_key", "W_value": "b_value"}
"""Each projection's bias role."""

STAGES = ("projections", "heads", "scores", "scaling", "mask", "weights", "dropout", "context", "merge", "output")
"""Check stages in the order a lesson computes them (a lesson uses some of them)."""


@dataclass(frozen=True)
class Seen:
    """One tensor the student's code computed: its id in the captured run, the op, its value, and where."""

    id: str
    op: str
    value: np.ndarray
    where: str = ""  # "file.py:LINE" of the student's statement, when the capture knows it


@dataclass(frozen=True)
class Quantity:
    """A quantity of the lesson the student's run must contain, read from the reference trace.

    ``step`` is the reference node (``batch.neg.omega``); ``optional`` marks
    an intermediate that a correct program may never hold (raw scores when the
    queries are scaled first, unscaled masked scores when the mask comes after
    the scaling): it is skipped when a later quantity of its ``group`` matches
    (only those named in ``after``, when given: a sibling alternative proves nothing).
    ``run`` is the student run it is compared with: ``eval`` (dropout off),
    ``train`` (dropout on, under the lesson's seed) or ``short`` (the result
    on a sequence shorter than ``context_length``, which a causal module must
    give as the first rows of its result on the whole sequence).
    """

    key: str
    stage: str
    step: str
    optional: bool = False
    group: str = ""
    run: str = "eval"
    after: tuple[str, ...] = ()  # for an optional quantity: the keys whose match shows it was computed another way


@dataclass(frozen=True)
class Match:
    """A student tensor holding a reference quantity, and how its axes map onto the reference's.

    ``perm[r]`` is the student axis that holds reference axis ``r``; ``lead``
    is how many leading student axes were read at their first entry (a batch
    axis the reference does not have).  ``split``, when not empty, is the
    shape the student's tensor is read in before ``perm`` applies: one axis
    that holds the batch and the heads merged (``(b·heads, T, d)``, as
    ``nn.MultiheadAttention`` and d2l's ``transpose_qkv`` lay them out) read
    back as two; or the tensor without inner axes of size one (a heads axis
    kept for one head, ``(b, 1, T, T)`` read as ``(b, T, T)``).
    """

    seen: Seen
    perm: tuple[int, ...]
    lead: int = 0
    error: float = 0.0  # max |student - reference| over the entries compared
    split: tuple[int, ...] = ()  # the shape the tensor is read back into, before ``perm``

    @property
    def merged(self) -> bool:
        """One axis of the student's tensor is read as two (batch·heads), not axes of size one dropped."""
        return len(self.split) > self.seen.value.ndim - self.lead

    def view(self) -> np.ndarray:
        """The student's tensor laid out as the reference quantity."""
        v = self.seen.value[(0,) * self.lead] if self.lead else self.seen.value
        if self.split:
            v = v.reshape(self.split)
        return np.transpose(v, self.perm)


@dataclass(frozen=True)
class Role:
    """Which of the student's parameters plays which role of the lesson's weights."""

    role: str  # W_query, W_key, W_value, W_out, b_out, b_query, b_key, b_value
    param: str  # the student's parameter name, e.g. "W_query.weight" or "qkv.weight[0:2]"
    how: Message  # how it is read: Message("how.linear") says "nn.Linear weight, read as weight.T"
    value: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros(0))


@dataclass
class StageResult:
    """One quantity of the lesson and what the student's run had for it."""

    quantity: Quantity
    status: str  # "match", "differs", "skipped" (optional, computed another way), "consequence", "not compared"
    match: Match | None = None
    nearest: Match | None = None
    note: str = ""

    @property
    def shown(self) -> Seen | None:
        """The student tensor that matched, or else the nearest one (None when none has a fitting shape)."""
        m = self.match or self.nearest
        return m.seen if m is not None else None

    @property
    def evidence(self) -> Seen | None:
        """The student tensor shown for this stage: the match, or the nearest for a stage that differs.

        A stage skipped (computed another way) or not compared has none: the
        nearest tensor is not the student's value for it.
        """
        if self.match is not None:
            return self.match.seen
        return self.nearest.seen if self.nearest is not None and self.status in ("differs", "consequence") else None


@dataclass
class Divergence:
    """The first reference quantity, in the lesson's order, that nothing in the student's run holds.

    ``element`` is the first differing entry's step id in the reference trace
    (``batch.neg.omega[1,1,2]``) with its ``reference`` value; ``student`` is
    the student's value at that entry in their nearest tensor ``student_id``
    (made at ``where``), or None when no tensor of theirs has that shape.
    """

    run: str
    stage: str
    quantity: str
    step: str
    element: str
    reference: float
    student: float | None
    student_id: str | None
    where: str
    note: str = ""  # on the shorter sequence: the error the student's code raised
    student_step: str | None = None  # the entry's id in the student's captured trace (explain it there)
    detail: dict[str, str] = field(default_factory=dict)  # what ``note`` says needs (a shape, a dtype)

    def to_json(self) -> dict[str, Any]:
        """The JSON form (``docs/check.md``)."""
        return {
            "run": self.run,
            "stage": self.stage,
            "quantity": self.quantity,
            "step": self.step,
            "element": self.element,
            "reference": _num(self.reference),
            "student": None if self.student is None else _num(self.student),
            "student_tensor": self.student_id,
            "where": self.where,
            "note": self.note,
            "student_step": self.student_step,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True)
class Diagnosis:
    """A catalogue entry whose hypothesis the student's tensors bear out."""

    code: str
    steps: tuple[str, ...]  # reference step ids involved
    student_id: str  # the student tensor that equals the mistake's prediction
    detail: dict[str, str] = field(default_factory=dict)  # fills the sentence, e.g. {"divisor": "d_k"}


def _num(v: float) -> float | str:
    """A float for JSON: non-finite values as the strings "inf", "-inf", "nan"."""
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(v)
