"""Shared fixtures: the tutorial's trace is computed once per session."""

from __future__ import annotations

import pytest

import tracer


@pytest.fixture(scope="session")
def tutorial() -> tracer.Trace:
    """The trace of the tutorial's example (six tokens, query 2, float32)."""
    return tracer.trace_self_attention()


_REPORTS: dict[tuple[str, bool], dict[str, bytes]] = {}


@pytest.fixture(scope="session")
def tutorial_report(tutorial: tracer.Trace):  # type: ignore[no-untyped-def]
    """``tutorial_report(lang, fragment=False)``: the tutorial's report files, built once per session."""
    from tracer import report

    def get(lang: str = "en", fragment: bool = False) -> dict[str, bytes]:
        key = (lang, fragment)
        if key not in _REPORTS:
            _REPORTS[key] = report.build(tutorial, lang, fragment=fragment)
        return _REPORTS[key]

    return get
