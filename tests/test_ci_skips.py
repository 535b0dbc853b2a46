"""Under CI, a test skipped for a missing declared dependency or a missing Chromium fails instead.

``make test`` runs the suite in pytest-xdist workers, so the same promise is
checked there too, with what the conftest does in a worker: torch on one thread.
"""

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
    assert _probe(tmp_path, PROBE, ci).startswith(summary + " in ")


def test_in_an_xdist_worker_too_and_torch_has_one_thread(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    threads = "\ndef test_one_thread():\n    import torch\n\n    assert torch.get_num_threads() == 1\n"
    last = _probe(tmp_path, PROBE + threads, "true", "-n", "1")
    assert last.startswith("1 failed, 1 passed, 1 skipped, 1 error in "), last


def _probe(tmp_path: Path, source: str, ci: str, *options: str) -> str:
    """Run ``source`` as a test module beside a copy of our conftest; pytest's last line (its summary)."""
    (tmp_path / "test_probe.py").write_text(source)
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *options, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    return proc.stdout.strip().splitlines()[-1]
