"""Shared fixtures: the tutorial's trace is computed once per session."""

from __future__ import annotations

import pytest

import tracer


@pytest.fixture(scope="session")
def tutorial() -> tracer.Trace:
    """The trace of the tutorial's example (six tokens, query 2, float32)."""
    return tracer.trace_self_attention()
