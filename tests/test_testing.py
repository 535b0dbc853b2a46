"""tracer.testing.assert_traces_close: the message, and the hidden frame."""

from __future__ import annotations

from dataclasses import replace

import pytest

import tracer
from tracer.testing import assert_traces_close

pytest_plugins = ["pytester"]


def test_close_traces_pass(tutorial: tracer.Trace, trace_files: dict[str, str]) -> None:
    assert assert_traces_close(tutorial, trace_files["a"]).equal


def test_message_is_the_diff(tutorial: tracer.Trace, nudged: tracer.Trace) -> None:
    with pytest.raises(AssertionError) as info:
        assert_traces_close(tutorial, nudged)
    message = str(info.value)
    assert message.startswith("traces differ\n")
    assert "root causes (1)" in message and "* x[1,1]" in message


def test_tolerance_is_passed_on(tutorial: tracer.Trace, nudged: tracer.Trace) -> None:
    # only the values may differ: a check's bound follows its data, so take the tutorial's
    nodes = [replace(n, attrs=tutorial.node(n.name).attrs) for n in nudged.nodes]
    same_meta = tracer.Trace(nodes, tutorial.meta)
    assert_traces_close(tutorial, same_meta, rtol=0, atol=1.0)


def test_frame_is_hidden(
    pytester: pytest.Pytester, trace_files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        f"""
        from tracer.testing import assert_traces_close

        def test_pinned():
            assert_traces_close({trace_files["a"]!r}, {trace_files["b"]!r})
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*assert_traces_close(*", "E *AssertionError: traces differ", "*x?1,1?*"]
    )  # brackets are a character class to fnmatch
    result.stdout.no_fnmatch_line("*testing.py:*")
    result.stdout.no_fnmatch_line("*raise AssertionError*")
