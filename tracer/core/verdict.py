"""What a verification found: the values that do not follow from their inputs, and what was not recomputed.

The result types of :func:`tracer.core.verify.verify`, kept apart from it so
that :meth:`tracer.core.trace.Trace.verify` can name its return type without
importing the module that reads traces (which would close an import circle:
the recomputation needs the trace, the trace would need the recomputation).
This module imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHOWN = 5
"""Ids of wrong steps listed per node in :meth:`Verification.summary`."""


@dataclass(frozen=True)
class Wrong:
    """A node with values that do not follow from its operands."""

    node: str
    count: int
    ids: tuple[str, ...]  # the first few wrong steps' ids


@dataclass(frozen=True)
class Verification:
    """What :func:`tracer.core.verify.verify` found: the wrong nodes, and the nodes it could not recompute."""

    wrong: tuple[Wrong, ...] = ()
    unchecked: tuple[str, ...] = ()
    checked: int = 0
    by_id: frozenset[str] = field(default_factory=frozenset)

    @property
    def ok(self) -> bool:
        """True when every checked value follows from its inputs."""
        return not self.wrong

    @property
    def count(self) -> int:
        """How many values do not follow."""
        return sum(w.count for w in self.wrong)

    def summary(self) -> str:
        """One line: which values do not follow from their inputs (empty when all do)."""
        if self.ok:
            return ""
        parts = []
        for w in self.wrong:
            more = f" and {w.count - len(w.ids)} more" if w.count > len(w.ids) else ""
            parts.append(", ".join(w.ids) + more)
        n = self.count
        verb = "values do not follow from their inputs" if n != 1 else "value does not follow from its inputs"
        return f"{n} {verb}: " + "; ".join(parts)
