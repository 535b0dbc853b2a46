"""Under CI, a test skipped for a missing declared dependency or a missing Chromium fails instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import pytest

def test_needs_a_package():
    pytest.importorskip("no_such_package_for_attn_trace")

@pytest.mark.skipif(True, reason="chromium is not installed")
def test_needs_chromium():
    pass

@pytest.mark.skip(reason="an ordinary skip")
def test_plain_skip():
    pass
"""


@pytest.mark.parametrize(
    ("ci", "summary"),
    [("", "3 skipped"), ("true", "1 failed, 1 skipped, 1 error")],  # a skipif skips at set-up: an error there
)
def test_required_skips_fail_in_ci(tmp_path: Path, ci: str, summary: str) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(summary + " in "), last
