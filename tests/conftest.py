"""Shared fixtures: the tutorial's trace is computed once per session.

The ``trace_snapshot`` fixture comes from the project's own pytest plugin.
Installed, the package registers it through the ``pytest11`` entry point; run
from a source tree (``PYTHONPATH=. python -m pytest``) it is not, so
:func:`pytest_addoption` registers it here unless it already is (loaded by the
entry point or by ``-p tracer.pytest_plugin``) or blocked with
``-p no:attn_trace``.  Registering it twice would be an error, which is why
this is not a ``pytest_plugins`` line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import tracer
import tracer.pytest_plugin
from tests import chromium
from tests.mutation import fresh_caches, shared

USER_CACHE = os.environ.get("ATTN_TRACE_CACHE")
"""The model cache folder the user set, if any (the session points ``ATTN_TRACE_CACHE`` at a folder of its own)."""

REQUIRED_IN_CI = ("could not import", "chromium is not installed")
"""Skip reasons that mean a declared test dependency or Chromium is missing: failures when ``CI`` is set."""


def _must_not_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    """Under CI, turn a skip for a missing test dependency into a failure (CI must run every test)."""
    if not (report.skipped and os.environ.get("CI") and isinstance(report.longrepr, tuple)):
        return
    reason = str(report.longrepr[2])
    if any(key in reason for key in REQUIRED_IN_CI):
        report.outcome = "failed"
        report.longrepr = f"skipped, but CI must run it: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Skips inside tests and fixtures (``importorskip``, ``skipif`` marks)."""
    outcome = yield
    _must_not_skip(outcome.get_result())  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """Skips while importing a test module (a module-level ``importorskip``)."""
    outcome = yield
    _must_not_skip(outcome.get_result())  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    """In a pytest-xdist worker (``make test`` starts one per core), torch computes on one thread.

    Each worker already has a core of its own; torch's default of a thread per
    core would put two threads of each worker on every core, fighting each
    other.  Results do not depend on it: ``make kernels`` checks that one
    thread writes the same bytes.  Processes the tests start keep torch's default.
    """
    if hasattr(config, "workerinput"):
        import torch

        torch.set_num_threads(1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In xdist workers, modules that hold a ``slow`` test come first (their order otherwise kept).

    ``make test`` hands whole modules to the workers in collection order
    (``--dist loadfile --no-loadscope-reorder``); a long module handed out last
    would keep one worker busy while the other waits, so the long ones start first.
    """
    if not hasattr(config, "workerinput"):
        return
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


@pytest.fixture(scope="session", autouse=True)
def _own_model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What tests write into lesson model's cache (the tiny models' dequantized weights) goes to the session's folder.

    The tests whose subject is the real model read it from the user's cache
    instead (``tests/test_model_lesson.py``'s ``user_cache``), as a reader's run would.
    """
    patch = pytest.MonkeyPatch()
    patch.setenv("ATTN_TRACE_CACHE", str(tmp_path_factory.mktemp("model-cache")))
    yield
    patch.undo()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under mutmut, a mutant's run starts without the index expressions its parent compiled."""
    fresh_caches()


@pytest.fixture(autouse=True)
def _fresh_caches_under_mutmut() -> None:
    """Under mutmut, every test compiles its index expressions anew (see :mod:`tests.mutation`)."""
    fresh_caches()


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the snapshot plugin when no entry point or ``-p`` did (its options then still get added)."""
    plugin = tracer.pytest_plugin
    if not pluginmanager.is_registered(plugin) and not pluginmanager.is_blocked("attn_trace"):
        pluginmanager.register(plugin, "attn_trace")


@pytest.fixture(scope="module")
def browser() -> Iterator[chromium.Browser]:
    """One headless Chromium per test module (a fresh profile each), closed after the module's last test."""
    if chromium.EXE is None:
        pytest.skip("chromium is not installed")
    b = chromium.Browser()
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope=shared("session"))
def tutorial() -> tracer.Trace:
    """The trace of the tutorial's example (six tokens, query 2, float32)."""
    return tracer.trace_self_attention()


@pytest.fixture(scope=shared("session"))
def nudged() -> tracer.Trace:
    """The tutorial's trace with one input changed: x[1,1] = 0.53 instead of 0.43."""
    from tracer.record.inputs import tutorial as tutorial_inputs

    values, tokens = tutorial_inputs()
    rows = [list(map(float, r)) for r in values]
    rows[0][0] = 0.53
    return tracer.trace_self_attention(rows, tokens=tokens)


@pytest.fixture(scope=shared("session"))
def trace_files(
    tmp_path_factory: pytest.TempPathFactory, tutorial: tracer.Trace, nudged: tracer.Trace
) -> dict[str, str]:
    """Trace files of the tutorial (``a``, and its copy ``same``) and of the nudged trace (``b``)."""
    folder = tmp_path_factory.mktemp("traces")
    out = {}
    for key, t in (("a", tutorial), ("same", tutorial), ("b", nudged)):
        path = folder / f"{key}.json"
        t.save(path)
        out[key] = str(path)
    return out


_REPORTS: dict[tuple[str, bool], dict[str, bytes]] = {}


@pytest.fixture(scope=shared("session"))
def tutorial_report(tutorial: tracer.Trace):  # type: ignore[no-untyped-def]
    """``tutorial_report(lang, fragment=False)``: the tutorial's report files, built once per session."""
    from tracer.present import report

    def get(lang: str = "en", fragment: bool = False) -> dict[str, bytes]:
        key = (lang, fragment)
        if key not in _REPORTS:
            _REPORTS[key] = report.build(tutorial, lang, fragment=fragment)
        return _REPORTS[key]

    return get
