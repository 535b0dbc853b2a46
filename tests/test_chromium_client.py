"""The test suite's Chromium client fails fast and says why when the browser does not start.

A Chromium that exits at once must not cost the whole start-up budget (240 s by
default), and its error must carry what the process printed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests import chromium


def fake(tmp_path: Path, body: str) -> str:
    """A stand-in for the chromium executable: a shell script with ``body``."""
    exe = tmp_path / "chromium"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    return str(exe)


def test_a_browser_that_exits_is_reported_at_once_with_its_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chromium, "EXE", fake(tmp_path, "echo 'no display, giving up' >&2; exit 7"))
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"exited with code 7; stderr: no display, giving up"):
        chromium.Browser(start_timeout=120)
    assert time.monotonic() - start < 60  # not the whole start-up budget


def test_a_silent_browser_times_out_after_the_start_up_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chromium, "EXE", fake(tmp_path, "exec sleep 30"))
    with pytest.raises(TimeoutError, match=r"Target.createTarget \(after 1 s\): no answer from Chromium"):
        chromium.Browser(start_timeout=1)
