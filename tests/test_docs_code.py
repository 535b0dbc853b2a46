"""The README's and docs' code runs as written, and the output they show is the real output.

Every ```python block of README.md and docs/*.md runs, file by file and in
order, in a fresh folder with the checkout importable (tests/docblocks.py).
Every ```console block line ``$ attn-trace ...`` that shows output under it is
run from the checkout, and its output must be the lines shown.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docblocks import Block, blocks, commands, verify

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
WITH_PYTHON = [p for p in DOCS if any(b.lang == "python" for b in blocks(p))]
SHOWN = [
    (p, b.line, cmd, out) for p in DOCS for b in blocks(p) if b.lang == "console" for cmd, out in commands(b) if out
]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


@pytest.mark.slow
@pytest.mark.parametrize("doc", WITH_PYTHON, ids=lambda p: p.name)
def test_python_blocks_run_as_written(doc: Path, tmp_path: Path) -> None:
    found: list[Block] = [b for b in blocks(doc) if b.lang == "python"]
    for b in found:
        for name, source in b.files:
            shutil.copy(ROOT / source, tmp_path / name)
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([[f"{doc.relative_to(ROOT)}:{b.line}", b.code] for b in found]), encoding="utf-8")
    runner = [sys.executable, str(ROOT / "tests" / "docblocks.py"), str(spec)]
    done = subprocess.run(runner, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize(("doc", "line", "command", "shown"), SHOWN, ids=[f"{p.name}:{n}" for p, n, _, _ in SHOWN])
def test_console_output_shown_is_real(doc: Path, line: int, command: str, shown: list[str]) -> None:
    argv = shlex.split(command)
    assert argv[0] == "attn-trace", f"{doc.name}:{line}: only attn-trace commands are checked: {command}"
    done = subprocess.run(
        [sys.executable, "-m", "tracer", *argv[1:]], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert [s.rstrip() for s in done.stdout.splitlines()] == shown, f"{doc.name}:{line}: {command}"


def test_the_harness_checks_what_a_comment_claims() -> None:
    assert verify(1689, "1689") is None
    assert verify(1064, "1689") == "1064 != 1689"
    assert verify(0.9544000625610352, "0.9544000625610352") is None
    assert verify(3, "the weight row of query 2 (a slice)") is None  # prose
    assert verify([1, 2], "Trace(lesson='simple', ...)") is not None
    assert verify("Trace(lesson='simple', x)", "'Trace(lesson=...)'") is not None
    assert len(SHOWN) >= 3 and WITH_PYTHON[0].name == "README.md"
