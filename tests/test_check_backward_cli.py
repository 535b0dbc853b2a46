"""``attn-trace check --backward``: each submission in its child process, a whole class, and every format."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from tests.test_check_backward import CORPUS, CORRECT, MISTAKES
from tracer.cli import app


def run(*args: str, lesson: str = "causal") -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["check", *args, "--lesson", lesson, "--backward", "-j", "2"])
    return res.exit_code, res.stdout, res.stderr


def test_the_whole_corpus_as_a_class_in_json() -> None:
    code, out, _ = run(f"{CORPUS}:attention_backward", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    by = {Path(s["file"]).stem: s for s in doc["submissions"]}
    for name in CORRECT:
        assert by[name]["status"] == "match", name
    for name, (mistake, _, _) in MISTAKES.items():
        assert by[name]["status"] == "differs" and by[name]["diagnosis"] == mistake, name
    assert by["mistake_rowsum_missing"]["where"] == "mistake_rowsum_missing.py:15"
    for name in (
        "verdict_shape",
        "verdict_dtype",
        "verdict_two",
        "verdict_function_shape",
        "verdict_fixed_scale",
        "verdict_huge",
    ):
        assert by[name]["status"] == "differs" and by[name]["diagnosis"] is None, name
        assert by[name]["check"]["first_divergence"]["note"].startswith("grad_") or name.endswith("scale"), name
    assert by["verdict_raises"]["status"] == "trouble" and "verdict_raises.py:17" in by["verdict_raises"]["message"]
    assert doc["summary"]["match"] == len(CORRECT) and doc["summary"]["trouble"] == 1


def test_one_submission_exits_0_when_it_matches_and_1_naming_the_mistake_in_chinese() -> None:
    code, out, _ = run(f"{CORPUS / 'back_function_flash.py'}:attention_backward")
    assert code == 0 and "MATCHES the lesson at every stage (9 quantities compared)" in out
    code, out, _ = run(f"{CORPUS / 'mistake_rowsum_missing.py'}:attention_backward", "--lang", "zh")
    flat = "".join(out.split())
    assert code == 1 and "[grad_rowsum_missing]" in out and "softmax的梯度缺少行和项" in flat
    assert "dneg.scaled.dot[" in out and "由你的dQ、dK和dV推出" in flat


def test_a_crash_is_one_line_with_the_students_line_and_exit_2() -> None:
    code, out, err = run(f"{CORPUS / 'verdict_raises.py'}:attention_backward")
    assert code == 2 and out == ""
    assert "Attention.backward raised RuntimeError" in err and "at verdict_raises.py:17" in err
    assert "Traceback" not in err


def test_gradescope_csv_and_html(tmp_path: Path) -> None:
    code, out, _ = run(f"{CORPUS / 'mistake_dk_untransposed.py'}:attention_backward", "--format", "gradescope")
    tests = json.loads(out)["tests"]
    assert code == 1 and [t["name"] for t in tests] == ["1. dvalues", "2. dqueries", "3. dkeys"]
    assert [t["score"] for t in tests] == [1, 1, 0]
    code, out, _ = run(f"{CORPUS / 'mistake_dk_untransposed.py'}:attention_backward", "--format", "csv")
    row = next(csv.DictReader(io.StringIO(out)))
    assert code == 1 and row["diagnosis"] == "grad_dk_untransposed" and row["stage:dkeys"] == "0"
    page = tmp_path / "check.html"
    code, _, _ = run(f"{CORPUS / 'mistake_dk_untransposed.py'}:attention_backward", "--format", "html", "-o", str(page))
    assert code == 1 and "grad_dk_untransposed" in page.read_text(encoding="utf-8")


def test_refusals_before_any_submission_runs() -> None:
    code, _, err = run(f"{CORPUS / 'back_einsum.py'}:attention_backward", "--d-out", "4")
    assert code == 2 and "--d-out, --d-in, --heads and --rope-style do not apply" in err
    code, _, err = run(f"{CORPUS / 'back_einsum.py'}:attention_backward", lesson="simple")
    assert code == 2 and "lesson simple has no backward check" in err
    code, _, err = run(f"{CORPUS / 'back_einsum.py'}:attention_backward", "--points", "nope.json", "--format", "csv")
    assert code == 2
