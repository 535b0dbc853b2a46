"""The tutorial's trace, pinned with the project's own snapshot plugin."""

from __future__ import annotations

import tracer


def test_tutorial_trace(trace_snapshot, tutorial: tracer.Trace) -> None:
    trace_snapshot.check(tutorial)
