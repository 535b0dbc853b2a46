"""``attn-trace check`` says which line of the student's file made the first wrong step, and ends hung code.

The line is read off the stack when each op runs (``Capture.sites``), so it
is the student's statement, not torch's; the tests find the expected line in
the student's file by its text rather than hard-coding a number.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.compare.check import deadline

CORPUS = Path(__file__).parent / "check_corpus"


def line_of(path: Path, text: str) -> str:
    """``name.py:N`` of the only line of ``path`` containing ``text``."""
    hits = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line]
    assert len(hits) == 1, hits
    return f"{path.name}:{hits[0]}"


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["check", *args])
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize(
    ("name", "spec", "lesson", "text"),
    [
        ("trainable_noscale.py", "SelfAttention", "trainable", "torch.softmax(queries @ keys.T, dim=-1)"),
        ("causal_mask_zero.py", "CausalAttention", "causal", "masked_fill"),
    ],
)
def test_first_divergence_names_the_students_line(name: str, spec: str, lesson: str, text: str) -> None:
    path = CORPUS / name
    want = line_of(path, text)
    code, out, _ = run(f"{path}:{spec}", "--lesson", lesson, "--format", "json")
    assert code == 1
    assert json.loads(out)["first_divergence"]["where"] == want
    code, out, _ = run(f"{path}:{spec}", "--lesson", lesson)
    assert code == 1 and f"made at {want})" in " ".join(out.split())  # the text wraps at 80 columns
    code, out, _ = run(f"{path}:{spec}", "--lesson", lesson, "--format", "html")
    assert code == 1 and f"made at {want}" in out


def test_every_matched_stage_has_a_line_in_the_students_file() -> None:
    path = CORPUS / "causal_book.py"
    code, out, _ = run(f"{path}:CausalAttention", "--lesson", "causal", "--format", "json")
    assert code == 0
    lines = len(path.read_text(encoding="utf-8").splitlines())
    stages = json.loads(out)["stages"]  # all but the uncaptured run on 4 tokens, compared by its result only
    wheres = [s["where"] for s in stages if s["status"] == "match" and s["quantity"] != "short"]
    assert wheres and all(w.startswith("causal_book.py:") and 1 <= int(w.split(":")[1]) <= lines for w in wheres)


def write(tmp_path: Path, body: str) -> str:
    path = tmp_path / "student.py"
    path.write_text(body, encoding="utf-8")
    return str(path)


def test_a_crash_names_the_students_line(tmp_path: Path) -> None:
    body = "import torch\n\n\ndef f(inputs):\n    scores = inputs @ inputs.T\n    raise ValueError('no')\n"
    code, out, err = run(write(tmp_path, body) + ":f", "--lesson", "simple")
    assert code == 2 and out == ""
    assert err.strip().endswith("f raised ValueError: no at student.py:6") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("import torch\n\n\ndef f(inputs):\n    while True:\n        pass\n", "the check of f did not finish"),
        ("while True:\n    pass\n", "student.py did not finish"),
        (
            "def f(inputs):\n    try:\n        while True:\n            pass\n    except Exception:\n        pass\n",
            "of f",
        ),
    ],
    ids=["forward", "import", "catches-exception"],
)
def test_an_endless_loop_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, said: str
) -> None:
    monkeypatch.setattr(deadline, "SECONDS", 0.5)
    code, out, err = run(write(tmp_path, body) + ":f", "--lesson", "simple")
    assert code == 2 and out == ""
    assert said in err and "within 0.5 s" in err and err.count("\n") == 1, err


def test_the_limit_gives_back_an_outer_timer() -> None:
    import signal

    if not hasattr(signal, "setitimer"):
        pytest.skip("no interval timers here")
    old = signal.signal(signal.SIGALRM, lambda *_: None)
    try:
        signal.setitimer(signal.ITIMER_REAL, 100.0)
        with deadline.limit(5.0, "x"):
            pass
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 90.0 < left <= 100.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
