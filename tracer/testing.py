"""Assertions for tests that pin a trace.

    from tracer.testing import assert_traces_close

    def test_lesson_is_stable(tmp_path):
        assert_traces_close("tests/data/pinned.json", tracer.trace_self_attention())

On failure the AssertionError carries the text report of
:func:`tracer.diff`: the counts per stage, the root causes and the first
differing steps.  This frame is hidden from pytest tracebacks, so the
failure points at the test's own line.  Imports numpy only, no torch.
"""

from __future__ import annotations

from tracer.compare.differ import DEFAULT_ATOL, DEFAULT_LIMIT, DEFAULT_RTOL, TraceDiff, TraceLike, diff


def assert_traces_close(
    a: TraceLike,
    b: TraceLike,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    limit: int = DEFAULT_LIMIT,
) -> TraceDiff:
    """Raise ``AssertionError`` with a readable diff unless traces ``a`` and ``b`` are equal within tolerance.

    ``a`` and ``b`` are Trace objects or trace file paths; values are close
    when ``|A - B| <= atol + rtol * |B|``.  Returns the (equal) diff.
    """
    __tracebackhide__ = True
    result = diff(a, b, rtol=rtol, atol=atol, limit=limit)
    if not result.equal:
        raise AssertionError("traces differ\n" + result.text())
    return result
