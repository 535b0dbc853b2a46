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

import pytest

import tracer
import tracer.pytest_plugin


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the snapshot plugin when no entry point or ``-p`` did (its options then still get added)."""
    plugin = tracer.pytest_plugin
    if not pluginmanager.is_registered(plugin) and not pluginmanager.is_blocked("attn_trace"):
        pluginmanager.register(plugin, "attn_trace")


@pytest.fixture(scope="session")
def tutorial() -> tracer.Trace:
    """The trace of the tutorial's example (six tokens, query 2, float32)."""
    return tracer.trace_self_attention()


@pytest.fixture(scope="session")
def nudged() -> tracer.Trace:
    """The tutorial's trace with one input changed: x[1,1] = 0.53 instead of 0.43."""
    from tracer.record.inputs import tutorial as tutorial_inputs

    values, tokens = tutorial_inputs()
    rows = [list(map(float, r)) for r in values]
    rows[0][0] = 0.53
    return tracer.trace_self_attention(rows, tokens=tokens)


@pytest.fixture(scope="session")
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


@pytest.fixture(scope="session")
def tutorial_report(tutorial: tracer.Trace):  # type: ignore[no-untyped-def]
    """``tutorial_report(lang, fragment=False)``: the tutorial's report files, built once per session."""
    from tracer.present import report

    def get(lang: str = "en", fragment: bool = False) -> dict[str, bytes]:
        key = (lang, fragment)
        if key not in _REPORTS:
            _REPORTS[key] = report.build(tutorial, lang, fragment=fragment)
        return _REPORTS[key]

    return get
