"""Each lesson's default trace, pinned with the project's own snapshot plugin.

The dropout mask is drawn by torch's RNG, which may differ between platforms;
its nodes are left out of the pinned trace, and ``test_lessons`` checks their
effect against ``nn.Dropout`` on whatever platform runs the tests.
"""

from __future__ import annotations

import pytest

import tracer
from tracer.core.trace import Trace

PLATFORM_DEPENDENT = ("dropout.",)


def pinned(t: Trace) -> Trace:
    """The trace without the nodes whose values depend on the platform's RNG."""
    return Trace([n for n in t.nodes if not n.name.startswith(PLATFORM_DEPENDENT)], t.meta)


@pytest.mark.parametrize("lesson", ["trainable", "causal", "multihead"])
def test_lesson_trace(trace_snapshot, lesson: str) -> None:  # type: ignore[no-untyped-def]
    trace_snapshot.check(pinned(tracer.trace_lesson(lesson)))
