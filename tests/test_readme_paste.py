"""The README works for someone who copies from it: every Python block and the commands after ``make``.

Each ```python block of README.md runs on its own, in a fresh folder, in
the three ways a reader runs pasted code: saved to a file and run, piped to
``python -``, and pasted into the interactive interpreter
(:mod:`tests.replpaste`, where a statement after an indented block needs a
blank line first).  The shell block that says how to call ``attn-trace``
after ``make`` runs in bash from the checkout, with the environment's
``bin/`` off ``PATH`` as in a new shell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docblocks import blocks
from tests.replpaste import paste

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PYTHON = [b for b in blocks(README) if b.lang == "python"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP", "VIRTUAL_ENV")}
    return {**env, "PYTHONPATH": str(ROOT)}


def _run(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=_env(), input=stdin, capture_output=True, text=True, timeout=600, check=False
    )


def test_the_console_reports_what_the_repl_refuses() -> None:
    assert paste("with open('/dev/null') as f:\n    f.read()\nx = 1\n").count("SyntaxError") == 1
    assert paste("with open('/dev/null') as f:\n    f.read()\n\nx = 1\n") == ""
    assert "ZeroDivisionError" in paste("1 / 0\n")


@pytest.mark.slow
def test_every_python_block_runs_from_a_file_from_stdin_and_in_the_repl(tmp_path: Path) -> None:
    """About 20 s: each block imports torch in a fresh interpreter twice, and once more for the REPL run."""
    assert len(PYTHON) >= 3
    for b in PYTHON:
        where = f"README.md:{b.line}"
        folder = tmp_path / f"block{b.line}"
        folder.mkdir()
        (folder / "block.py").write_text(b.code, encoding="utf-8")
        ran = _run([sys.executable, "block.py"], folder)
        assert ran.returncode == 0, f"{where} as a file:\n{ran.stderr[-2000:]}"
        ran = _run([sys.executable, "-"], folder, stdin=b.code)
        assert ran.returncode == 0, f"{where} piped to python -:\n{ran.stderr[-2000:]}"
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([[f"README.md:{b.line}", b.code] for b in PYTHON]), encoding="utf-8")
    repl = tmp_path / "repl"
    repl.mkdir()
    ran = _run([sys.executable, str(ROOT / "tests" / "replpaste.py"), str(spec)], repl)
    assert ran.returncode == 0, ran.stderr[-3000:]


def test_the_commands_after_make_run_in_a_new_shell(tmp_path: Path) -> None:
    """``.venv/bin/attn-trace`` and ``source .venv/bin/activate``, with the environment this suite runs in."""
    (shown,) = [b for b in blocks(README) if b.lang == "sh" and ".venv/bin/attn-trace" in b.code]
    env_dir = ROOT / ".venv" if (ROOT / ".venv" / "bin" / "attn-trace").exists() else Path(sys.prefix)
    if not (env_dir / "bin" / "activate").exists() or not (env_dir / "bin" / "attn-trace").exists():
        pytest.skip(f"{env_dir} is no virtual environment with attn-trace installed (make PYTHON=...)")
    script = shown.code.replace(".venv/", f"{env_dir}/")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != env_dir / "bin")
    env = {**_env(), "PATH": path}
    assert subprocess.run(["bash", "-c", "command -v attn-trace"], env=env, capture_output=True).returncode != 0
    ran = subprocess.run(
        ["bash", "-e", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("simple ")  # attn-trace lessons
    assert "omega[2,1] = x(2)·x(1) = 0.55×0.43 + 0.87×0.15 + 0.66×0.89" in ran.stdout  # then explain, activated
