"""Check a student's attention code against a lesson: the first wrong step, named.

:func:`check` builds the student's module with the lesson's sizes under the
lesson's seed, takes the student's own weights (:mod:`.roles`), computes the
lesson's reference with them (:mod:`.reference`; what each lesson asks is its check
description, :mod:`.lessons`), runs the student's code with
every tensor recorded, finds each reference quantity among those tensors by
value whatever their layout (:mod:`.align`), and names the first quantity that
nothing matches.  The catalogue (:mod:`.catalogue`) then tests which common
mistake predicts exactly what the student's code computed.  ``docs/check.md``
documents the signatures, the JSON schema and the catalogue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.compare.check.result import CheckResult
    from tracer.compare.check.run import check

__all__ = ["CheckResult", "check"]


def __getattr__(name: str) -> Any:
    """``check`` and ``CheckResult``, imported on first use: a lesson's check description imports no torch."""
    if name == "check":
        from tracer.compare.check.run import check

        return check
    if name == "CheckResult":
        from tracer.compare.check.result import CheckResult

        return CheckResult
    raise AttributeError(name)
