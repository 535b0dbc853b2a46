"""What the catalogue's hypotheses look at: the reference's values, the student's tensors, their roles.

A :class:`Context` is built once per check; a :class:`Hit` is a hypothesis
borne out (which student tensor equals the prediction, the reference steps
involved, and the details its sentence needs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tracer.compare.check import align
from tracer.compare.check.evidence import Other, Run
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Role, Seen
from tracer.compare.check.student import StudentError
from tracer.core.trace import Trace
from tracer.message import Arg


@dataclass(frozen=True)
class Hit:
    """A hypothesis the student's run bears out."""

    seen: Seen | None
    steps: tuple[str, ...]
    detail: Mapping[str, Arg] = field(default_factory=dict)  # the arguments of its sentence
    code: str = ""
    where: str = ""


@dataclass
class Context:
    """The reference trace, the student's runs and the roles of their parameters."""

    spec: Spec
    trace: Trace
    seen: list[Seen]
    roles: dict[str, Role]
    final: Seen | None = None
    train: list[Seen] = field(default_factory=list)
    short_error: StudentError | None = None
    short_where: str = ""
    captured: Trace | None = None  # the student's eval run, captured
    runs: dict[str, Run] = field(default_factory=dict)  # every run of the student's code, by name
    other: list[Other] | None = None  # the second builds, at other sizes
    structure: tuple[str, Mapping[str, str]] | None = None  # what building found: another attention than the lesson's
    source: str | None = None  # the student's file
    traces: dict[str, Trace] = field(default_factory=dict)  # run -> the lesson's trace, when each run has its own

    def needed(self, name: str) -> Run:
        """Run ``name``, which the lesson compares: data without it is not what a check produces."""
        from tracer.compare.check.evidence import Malformed

        if name not in self.runs:
            raise Malformed(f"the run {name!r} is missing")
        return self.runs[name]

    @property
    def causal(self) -> bool:
        """True for the lessons with a causal mask (and no other)."""
        return self.spec.causal

    @property
    def tokens(self) -> int:
        """T, the number of tokens the student's code was called on."""
        return int(self.trace.meta.get("n_tokens", 6))

    @property
    def sqrt_dk(self) -> float:
        """√d_k for one head (1 for a lesson that does not scale its scores)."""
        return math.sqrt(self.spec.head_dim) if self.spec.scaled else 1.0

    def has(self, key: str) -> bool:
        """True when the lesson has quantity ``key`` (or ``x``, the inputs)."""
        return key == "x" or any(q.key == key for q in self.spec.quantities)

    def step(self, key: str) -> str:
        """The reference step (node) of quantity ``key``."""
        if key == "x":
            return "x"
        return next(q.step for q in self.spec.quantities if q.key == key)

    def ref(self, key: str) -> tuple[np.ndarray, tuple[str, ...]]:
        """The reference value of quantity ``key`` (float64) and its axes."""
        node = self.trace.node(self.step(key))
        return np.asarray(node.value, dtype=np.float64), node.axes

    def holds(self, value: np.ndarray, axes: Sequence[str], only: Sequence[Seen] | None = None) -> Seen | None:
        """The first student tensor holding ``value`` in any allowed layout."""
        m = align.find(value, axes, self.seen if only is None else only)
        return m.seen if m else None

    def first(
        self,
        tries: Sequence[np.ndarray],
        axes: Sequence[str],
        steps: tuple[str, ...],
        detail: Mapping[str, Arg] | None = None,
        only: Sequence[Seen] | None = None,
    ) -> Hit | None:
        """A hit for the first prediction in ``tries`` that a student tensor holds."""
        for value in tries:
            seen = self.holds(value, axes, only)
            if seen is not None:
                return Hit(seen, steps, dict(detail or {}))
        return None
