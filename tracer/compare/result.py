"""The data of a comparison: differing steps, other changes, counts per stage.

Plain frozen dataclasses with no behaviour beyond totals, so that both the
comparer (:mod:`tracer.compare.differ`) and the report writer
(:mod:`tracer.compare.diffreport`) can import them without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StepDiff:
    """One differing step as the report shows it.

    ``kind`` is ``"value"`` (in both traces, not close), ``"only_a"`` or
    ``"only_b"``.  For a tensor-level step (``mat.alpha``) ``a``, ``b`` and
    ``abs_diff`` are taken at ``where``, the 1-based position of its first
    entry that is not close.
    """

    id: str
    node: str
    stage: str
    op: str
    kind: str
    formula: str
    a: float | None
    b: float | None
    abs_diff: float | None
    tol: float | None
    root: bool
    where: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Change:
    """A difference that is not a step's value: a metadata key, or a node's op, formula, inputs or shape.

    ``subject`` is a metadata key (``dtype``, ``format_version``, ``inputs.x``)
    or a node name; ``field`` is ``"value"`` for metadata, else the node field
    that changed (``op``, ``latex``, ``args``, ``shape``, ``exists``, ...).
    """

    subject: str
    field: str
    a: Any
    b: Any
    note: str = ""


@dataclass(frozen=True)
class StageCount:
    """Step counts of one stage: compared (in both), differing, only in A, only in B, root causes."""

    stage: str
    compared: int = 0
    differing: int = 0
    only_a: int = 0
    only_b: int = 0
    roots: int = 0
    max_abs_diff: float = 0.0  # the largest |A-B| among compared values, close or not (NaN skipped; inf stays)


@dataclass(frozen=True)
class DiffResult:
    """What :func:`tracer.compare.differ.diff` found: what changed, how much, and where it started.

    The data alone; :class:`tracer.compare.differ.TraceDiff` adds the ``text()``
    and ``to_json()`` conveniences, which call :mod:`tracer.compare.diffreport`.
    """

    a_name: str
    b_name: str
    rtol: float
    atol: float
    limit: int
    meta: tuple[Change, ...]
    nodes: tuple[Change, ...]
    stages: tuple[StageCount, ...]
    roots: tuple[StepDiff, ...]  # the first `limit` root causes, in dependency order
    steps: tuple[StepDiff, ...]  # the first `limit` differing steps, in dependency order
    notes: tuple[str, ...] = ()  # per file read: which of its values do not follow from their inputs

    @property
    def totals(self) -> StageCount:
        """The stage counts summed over all stages."""
        s = self.stages
        return StageCount(
            "total",
            sum(c.compared for c in s),
            sum(c.differing for c in s),
            sum(c.only_a for c in s),
            sum(c.only_b for c in s),
            sum(c.roots for c in s),
            max((c.max_abs_diff for c in s), default=0.0),
        )

    @property
    def equal(self) -> bool:
        """True when nothing differs: every value close, no step, node or metadata change."""
        t = self.totals
        return not (self.meta or self.nodes or t.differing or t.only_a or t.only_b)
