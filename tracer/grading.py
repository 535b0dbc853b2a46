"""Partial credit: a check's verdict as one graded test per stage of the lesson, with points a teacher sets.

A stage (``projections``, ``scores``, ``mask``, …) earns its points when
every step of it matches the lesson (or is computed another way, or is not
compared).  The stages before the first divergence therefore earn theirs;
the stage where the first divergence is found says what the mistake is and
where; a later stage whose values follow from that mistake says it could
not be credited and why.  Gradescope's ``results.json`` gets one test per
stage (:func:`tests`), the CSV one column per stage (:func:`stage_marks`).

Points come from :data:`DEFAULT` (one point a stage, every test visible) or
a ``--points FILE`` (:func:`load`), which is untrusted data: a JSON object
``{"default": 1, "stages": {"mask": 3}, "visibility": "visible",
"stdout_visibility": "hidden"}``, each key optional, every value checked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracer.core.files import quoted, read_limited
from tracer.core.serialize import unique_keys
from tracer.errors import InputError
from tracer.message import Message
from tracer.textsafe import printable

PASS = ("match", "skipped", "not compared")
"""The steps' statuses that earn a stage its points."""

VISIBILITY = ("hidden", "after_due_date", "after_published", "visible")
"""Gradescope's visibility settings."""

MOST = 1000.0
"""The most points one stage may carry."""


@dataclass(frozen=True)
class Points:
    """Points per stage, and what students see of the tests and of their code's output."""

    default: float = 1.0
    stages: dict[str, float] = field(default_factory=dict)
    visibility: str = "visible"
    stdout_visibility: str = "hidden"

    def of(self, stage: str) -> float:
        """The points of ``stage``."""
        return self.stages.get(stage, self.default)


DEFAULT = Points()


def load(path: Path, known: Sequence[str] | None = None) -> Points:
    """Read and check a ``--points`` file; :class:`~tracer.errors.InputError` in one line when it is not one.

    ``known`` are the stages of the lesson checked: a stage the file names
    that is not one of them (a typo, another lesson's) would silently earn
    the default instead, so it is refused, naming the stages there are.
    """
    try:
        doc = json.loads(read_limited(path, 1 << 20, "points file"), object_pairs_hook=unique_keys)
    except (ValueError, RecursionError) as e:
        raise InputError(Message("points.not_points_file", file=quoted(path), error=str(e))) from None
    if not isinstance(doc, dict):
        raise InputError(Message("points.not_points_file_give", file=quoted(path)))
    unknown = sorted(set(doc) - {"default", "stages", "visibility", "stdout_visibility"})
    if unknown:
        raise InputError(Message("points.unknown_key_default_stages", file=quoted(path), unknown=repr(unknown[0])))
    stages = doc.get("stages", {})
    if not isinstance(stages, dict):
        raise InputError(Message("points.stages_must_map_each", file=quoted(path)))
    strange = [str(k) for k in stages if known is not None and k not in known]
    if strange:
        there = ", ".join(dict.fromkeys(known or ()))
        raise InputError(
            Message(
                "points.lesson_no_stage_stages", file=quoted(path), strange=repr(printable(strange[0])), there=there
            )
        )
    return Points(
        _points(path, "default", doc.get("default", 1)),
        {str(k): _points(path, f"stages.{k}", v) for k, v in stages.items()},
        _visibility(path, "visibility", doc.get("visibility", "visible")),
        _visibility(path, "stdout_visibility", doc.get("stdout_visibility", "hidden")),
    )


def _points(path: Path, where: str, value: Any) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not 0 <= value <= MOST:
        raise InputError(
            Message("points.must_number_not", file=quoted(path), where=printable(where), most=MOST, value=repr(value))
        )
    return float(value)


def _visibility(path: Path, where: str, value: Any) -> str:
    if value not in VISIBILITY:
        raise InputError(
            Message(
                "points.must_one_not",
                file=quoted(path),
                where=where,
                visibility=", ".join(VISIBILITY),
                value=repr(value),
            )
        )
    return str(value)


def stage_marks(doc: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """``(stage, credited, why)`` for each stage of the lesson, in the order the check met them."""
    order: dict[str, list[dict[str, Any]]] = {}
    for step in doc.get("stages") or []:
        order.setdefault(str(step.get("stage")), []).append(step)
    first = doc.get("first_divergence") or {}
    diag = str((doc.get("diagnosis") or {}).get("sentence") or "")
    marks = []
    for stage, steps in order.items():
        if all(s.get("status") in PASS for s in steps):
            marks.append((stage, True, "matches the lesson"))
        elif stage == first.get("stage"):
            where = f" at {first['where']}" if first.get("where") else ""
            marks.append((stage, False, f"first divergence{where}: {diag}".rstrip(": ")))
        elif first and all(s.get("status") in (*PASS, "consequence") for s in steps):
            why = f"not credited: its values follow from the first divergence, in stage {first.get('stage')}"
            marks.append((stage, False, why))
        else:
            said = "; ".join(f"{s.get('step')}: {s.get('status')}" for s in steps if s.get("status") not in PASS)
            marks.append((stage, False, said))
    return marks


def _number(value: float) -> float | int:
    """``2`` rather than ``2.0`` for a whole number of points (as a teacher wrote it)."""
    return int(value) if value.is_integer() else value


def tests(doc: dict[str, Any], points: Points = DEFAULT) -> list[dict[str, Any]]:
    """Gradescope's tests for one check's document: one per stage, with its points and why it lost them."""
    out = []
    for n, (stage, ok, why) in enumerate(stage_marks(doc), 1):
        most = _number(points.of(stage))
        out.append(
            {
                "name": printable(f"{n}. {stage}"),
                "score": most if ok else 0,
                "max_score": most,
                "output": printable(why),
                "visibility": points.visibility,
                "status": "passed" if ok else "failed",
            }
        )
    return out
