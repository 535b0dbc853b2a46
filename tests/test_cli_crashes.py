"""A crash is never read as a verdict: any unexpected exception is one line and exit 3 (issue 24, item 7).

Exit 1 means "differences found" to ``diff``, ``verify`` and ``check``; a
grading script must never see it for a bug of ours.  Ctrl-C exits 130.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import tracer.cli.trace as trace_cmd
from tracer.cli import app
from tracer.cli.group import Crash


def _boom(exc: BaseException) -> object:
    def build(**_: object) -> object:
        raise exc

    return build


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (RuntimeError("a bug"), "RuntimeError: a bug"),
        (KeyError("evil"), "KeyError: 'evil'"),
        (MemoryError(), "out of memory"),
        (IndexError("x\x1b[2K\nfake line"), "IndexError: x\\x1b[2K\\nfake line"),
        (RecursionError("deep"), "RecursionError: deep"),
    ],
)
def test_any_exception_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch, exc: BaseException, words: str) -> None:
    monkeypatch.setattr(trace_cmd, "build_trace", _boom(exc))
    r = CliRunner().invoke(app, ["trace"])
    assert r.exit_code == Crash.exit_code == 3 and isinstance(r.exception, SystemExit)
    assert len(r.output.strip().splitlines()) == 1 and words in r.output and "internal error" in r.output, r.output
    assert "Traceback" not in r.output


def test_ctrl_c_is_130_not_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_cmd, "build_trace", _boom(KeyboardInterrupt()))
    assert CliRunner().invoke(app, ["trace"]).exit_code == 130


def test_the_traceback_is_one_variable_away(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_cmd, "build_trace", _boom(RuntimeError("a bug")))
    monkeypatch.setenv("ATTN_TRACE_TRACEBACK", "1")
    r = CliRunner().invoke(app, ["trace"])
    assert isinstance(r.exception, RuntimeError)


def test_usage_errors_and_verdicts_keep_their_codes(tmp_path: object) -> None:
    assert CliRunner().invoke(app, ["steps", "--no-such-option"]).exit_code == 2
    assert CliRunner().invoke(app, ["--version"]).exit_code == 0


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "-o", "{locked}/t.json"],
        ["report", "--format", "md", "-o", "{locked}/r"],
        ["steps", "--inputs", "{locked}/in.json"],
        ["steps", "--lesson", "trainable", "--weights", "{locked}/w.json"],
    ],
)
def test_a_place_this_user_may_not_look_into_is_bad_input(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """``Path.exists()`` raises ``PermissionError`` under a folder without search permission (root is exempt)."""
    import os

    locked = f"{tmp_path}/locked"
    real_stat, real_lstat = os.stat, os.lstat

    def guard(real: object) -> object:
        def call(path: object, *a: object, **k: object) -> object:
            if os.fspath(path).startswith(locked):  # type: ignore[call-overload]
                raise PermissionError(13, "Permission denied", os.fspath(path))  # type: ignore[call-overload]
            return real(path, *a, **k)  # type: ignore[operator]

        return call

    monkeypatch.setattr(os, "stat", guard(real_stat))
    monkeypatch.setattr(os, "lstat", guard(real_lstat))
    r = CliRunner().invoke(app, [a.replace("{locked}", locked) for a in args])
    assert r.exit_code == 2 and "Permission denied" in r.output and len(r.output.strip().splitlines()) == 1, r.output
