"""Golden-file comparison (after coverage.py's ``goldtest.compare``).

``compare(folder, files)`` checks that ``folder`` holds exactly ``files``,
byte for byte, and fails with a unified diff of the first differences.  Run
with ``UPDATE_GOLD=1`` to rewrite the folder from ``files`` instead.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

MAX_DIFF_LINES = 80


def updating() -> bool:
    """True when the run should rewrite golden files (``UPDATE_GOLD=1``)."""
    return os.environ.get("UPDATE_GOLD", "") not in ("", "0")


def compare(folder: Path, files: dict[str, bytes]) -> None:
    """Assert ``folder`` holds exactly ``files``; with ``UPDATE_GOLD=1``, make it so."""
    if updating():
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            if old.is_file() and old.name not in files:
                old.unlink()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        return
    have = sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
    assert have == sorted(files), f"{folder}: files {have} != expected {sorted(files)} (UPDATE_GOLD=1 rewrites)"
    problems = []
    for name, data in sorted(files.items()):
        gold = (folder / name).read_bytes()
        if gold == data:
            continue
        diff = difflib.unified_diff(
            gold.decode("utf-8").splitlines(),
            data.decode("utf-8").splitlines(),
            f"{folder.name}/{name} (gold)",
            f"{folder.name}/{name} (now)",
            lineterm="",
            n=2,
        )
        problems.append("\n".join(list(diff)[:MAX_DIFF_LINES]))
    assert not problems, "golden files differ (UPDATE_GOLD=1 rewrites them):\n" + "\n".join(problems)
