"""The pytest plugin: the trace_snapshot fixture, tested with pytester."""

from __future__ import annotations

import importlib
import shutil
import tomllib
from pathlib import Path

import pytest

from tracer.pytest_plugin import safe_name

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
SNAP = Path("__trace_snapshots__") / "test_pinned"

TEST = """
import pytest
import tracer

def test_snap(trace_snapshot):
    trace_snapshot.check(tracer.load("current.json"))

@pytest.mark.parametrize("case", ["a/b c"])
def test_param(trace_snapshot, case):
    trace_snapshot.check(tracer.load("current.json"))
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, trace_files: dict[str, str]) -> pytest.Pytester:
    """A test project whose test pins ``current.json`` (the tutorial's trace to begin with)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # -p below loads it whether installed or not
    pytester.makepyfile(test_pinned=TEST)
    shutil.copy(trace_files["a"], pytester.path / "current.json")
    return pytester


def run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    # the plugin module is already imported here, so pytest cannot rewrite its asserts (it has none)
    return p.runpytest("-p", "tracer.pytest_plugin", "-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


def test_missing_snapshot_fails(project: pytest.Pytester) -> None:
    result = run(project, "-k", "test_snap")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no trace snapshot __trace_snapshots__/test_pinned/test_snap.json*"])
    assert (project.path / SNAP / "test_snap.obtained.json").exists()
    assert not (project.path / SNAP / "test_snap.json").exists()


def test_update_writes_then_matching_passes(project: pytest.Pytester) -> None:
    run(project, "--trace-snapshot-update").assert_outcomes(passed=2)
    assert sorted(p.name for p in (project.path / SNAP).iterdir()) == [
        f"{safe_name('test_param[a/b c]')}.json",
        "test_snap.json",
    ]
    run(project).assert_outcomes(passed=2)


def test_mismatch_writes_obtained_and_prints_the_diff(project: pytest.Pytester, trace_files: dict[str, str]) -> None:
    run(project, "--trace-snapshot-update").assert_outcomes(passed=2)
    shutil.copy(trace_files["b"], project.path / "current.json")
    result = run(project, "-k", "test_snap")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*trace differs from snapshot __trace_snapshots__/test_pinned/test_snap.json*"])
    out = result.stdout.str()
    assert "root causes (1)" in out and "* x[1,1]" in out
    obtained = project.path / SNAP / "test_snap.obtained.json"
    assert obtained.read_bytes() == Path(trace_files["b"]).read_bytes()
    run(project, "-k", "test_snap", "--trace-snapshot-update").assert_outcomes(passed=1)
    assert not obtained.exists()
    run(project, "-k", "test_snap").assert_outcomes(passed=1)


def test_unreadable_snapshot_fails_cleanly(project: pytest.Pytester) -> None:
    (project.path / SNAP).mkdir(parents=True)
    (project.path / SNAP / "test_snap.json").write_text('{"format": "attn-trace"', "utf-8")
    result = run(project, "-k", "test_snap")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cannot read trace snapshot*truncated*"])


def test_safe_names() -> None:
    assert safe_name("test_x[a/b c]").startswith("test_x[a_b_c]-")
    assert len({safe_name("t[query/2]"), safe_name("t[query 2]"), safe_name("t[query_2]")}) == 3  # never one file
    assert safe_name("TestK.test_y[1.5-x]") == "TestK.test_y[1.5-x]"
    long = safe_name("test_" + "x" * 500)
    assert len(long) == 120 and long != safe_name("test_" + "x" * 499)


def test_entry_point_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    target = project["entry-points"]["pytest11"]["attn_trace"]
    assert target == "tracer.pytest_plugin"
    module = importlib.import_module(target)
    assert callable(module.pytest_addoption) and hasattr(module, "trace_snapshot")


def test_ids_that_sanitize_alike_keep_their_own_snapshots(
    project: pytest.Pytester, trace_files: dict[str, str]
) -> None:
    project.makepyfile(
        test_pinned="""
import pytest
import tracer

@pytest.mark.parametrize("case", ["query/2", "query 2"])
def test_param(trace_snapshot, case):
    trace_snapshot.check(tracer.load("a.json" if case == "query/2" else "b.json"))
"""
    )
    shutil.copy(trace_files["a"], project.path / "a.json")
    shutil.copy(trace_files["b"], project.path / "b.json")
    run(project, "--trace-snapshot-update").assert_outcomes(passed=2)
    assert len(list((project.path / SNAP).iterdir())) == 2
    run(project).assert_outcomes(passed=2)  # one shared file would fail one of them on every run
