"""``attn-trace check 'DIR/*.py:NAME'``: a whole class, one line per student, a summary, and every format."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app

CLASS = Path(__file__).parent / "check_class"
HOSTILE_NAME = "=SUM(A1)<b>x.py"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A class of four: correct, buggy, a hostile message, and a correct file with a hostile name."""
    d = tmp_path_factory.mktemp("class")
    for name in ("correct.py", "buggy_mask_zero.py", "hostile_message.py"):
        shutil.copy(CLASS / name, d / name)
    shutil.copy(CLASS / "correct.py", d / HOSTILE_NAME)
    return d


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["check", *args, "--lesson", "causal", "-j", "2"])
    return res.exit_code, res.stdout, res.stderr


def test_the_whole_class_folder() -> None:
    code, out, _ = run(f"{CLASS}:CausalAttention", "--timeout", "8", "--memory", "512")
    assert code == 1
    lines = dict(
        line.split(": ", 1) for line in out.splitlines() if line.endswith(tuple("0123456789h)")) or ": " in line
    )
    assert lines["correct.py"] == "match" and lines["printer.py"] == "match" and lines["chdir.py"] == "match"
    assert lines["buggy_mask_zero.py"] == "differs mask_zero at buggy_mask_zero.py:21"
    assert lines["hanging.py"].startswith("no verdict:") and "killed" in lines["hanging.py"]
    assert "SIGSEGV" in lines["crashing.py"] and "before sending its verdict" in lines["exits_early.py"]
    assert lines["memory_hungry.py"].startswith("trouble: ran out of memory")
    assert lines["patch_tracer.py"] == "differs scale_missing at patch_tracer.py:42"
    assert "sent malformed data" in lines["forge_verdict.py"] and "sent malformed data" in lines["forge_data.py"]
    assert "16 submissions: 6 match, 3 differ, 2 trouble, 5 no verdict" in out
    assert "most common mistakes: mask_zero (1), no diagnosis (1), scale_missing (1)" in out
    assert "\x1b" not in out


def test_a_glob_and_all_matching(small: Path) -> None:
    code, out, _ = run(f"{small}/correct*.py:CausalAttention")
    assert code == 0 and out.startswith("correct.py: match\n") and "1 submissions: 1 match" in out
    code, _, err = run(f"{small}/nothing*.py:CausalAttention")
    assert code == 2 and "no .py files match" in err


def test_json_and_csv(small: Path, tmp_path: Path) -> None:
    code, out, _ = run(f"{small}:CausalAttention", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["schema"] == "attn-trace-check-class" and doc["summary"]["match"] == 2
    by = {s["file"]: s for s in doc["submissions"]}
    assert by["buggy_mask_zero.py"]["diagnosis"] == "mask_zero" and by["buggy_mask_zero.py"]["check"]["ok"] is False
    assert by["hostile_message.py"]["status"] == "trouble" and "\x1b" not in by["hostile_message.py"]["message"]
    code, _, err = run(f"{small}:CausalAttention", "--format", "csv", "-o", str(tmp_path / "c.csv"))
    rows = list(csv.reader(io.StringIO((tmp_path / "c.csv").read_text())))
    assert rows[0][:6] == ["file", "status", "diagnosis", "stage", "where", "message"]
    assert rows[0][6:] == [
        f"stage:{s}" for s in ("projections", "scores", "mask", "scaling", "weights", "dropout", "context")
    ]
    cells = [c for row in rows[1:] for c in row]
    assert "'=SUM(A1)<b>x.py" in cells  # a formula is quoted
    assert not any(c and c[0] in "=+-@" for c in cells)
    assert "4 submissions" in err


def test_gradescope(small: Path, tmp_path: Path) -> None:
    code, out, _ = run(f"{small}:CausalAttention", "--format", "gradescope")
    assert code == 1
    students = json.loads(out)["students"]
    good, bad, trouble = students["correct.py"], students["buggy_mask_zero.py"], students["hostile_message.py"]
    assert {"name", "score", "max_score", "output", "visibility"} <= set(good["tests"][0])
    assert good["score"] == len(good["tests"]) == 7  # one test per stage of the lesson
    assert 0 < bad["score"] < len(bad["tests"]) and any("mask" in t["name"] and t["score"] == 0 for t in bad["tests"])
    assert trouble["score"] == 0 and "raised ValueError" in trouble["tests"][0]["output"]
    res = CliRunner().invoke(
        app, ["check", f"{small / 'correct.py'}:CausalAttention", "--lesson", "causal", "--format", "gradescope"]
    )
    assert res.exit_code == 0 and json.loads(res.stdout)["score"] == 7
    out = tmp_path / "results.json"
    spec = f"{small / 'hostile_message.py'}:CausalAttention"
    res = CliRunner().invoke(app, ["check", spec, "--lesson", "causal", "--format", "gradescope", "-o", str(out)])
    assert res.exit_code == 2 and json.loads(out.read_text())["tests"][0]["score"] == 0


def test_html_folder(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    code, _, err = run(f"{small}:CausalAttention", "--format", "html", "-o", str(out))
    assert code == 1 and "wrote" in err
    index = (out / "index.html").read_text()
    pages = sorted(p.name for p in out.iterdir() if p.name != "index.html")
    assert len(pages) == 4 and all(f'href="{p}"' in index for p in pages)
    assert "&lt;b&gt;" in index and "<b>" not in index
    trouble = next(p for p in pages if "hostile_message" in p)
    text = (out / trouble).read_text()
    assert "&lt;script&gt;" in text and "<script>" not in text
    code, _, err = run(f"{small}:CausalAttention", "--format", "html", "-o", str(out))
    assert code == 2 and "--force" in err
    code, _, err = run(f"{small}:CausalAttention", "--format", "html")
    assert code == 2 and "-o DIR" in err


def test_a_class_in_chinese(small: Path, tmp_path: Path) -> None:
    """``--lang zh``: verdicts, summary and class page in Chinese; codes and file names as they are."""
    res = CliRunner().invoke(
        app, ["check", f"{small}:CausalAttention", "--lesson", "causal", "-j", "2", "--lang", "zh"]
    )
    assert res.exit_code == 1, res.output
    lines = dict(line.split(": ", 1) for line in res.stdout.splitlines() if ": " in line)
    assert lines["correct.py"] == "一致"
    assert lines["buggy_mask_zero.py"] == "不一致 mask_zero 位于 buggy_mask_zero.py:21"
    assert lines["hostile_message.py"].startswith("出错：CausalAttention 抛出了 ValueError: ")  # their text as it was
    assert "共 4 份提交：2 份一致，1 份不一致，1 份出错，0 份没有结论" in res.stdout
    assert "最常见的错误：" in res.stdout and "mask_zero (1)" in res.stdout
    assert not any(w in res.stdout for w in ("match", "differ", "submissions", "trouble", "no verdict"))
    out = tmp_path / "site"
    res = CliRunner().invoke(
        app,
        [
            "check",
            f"{small}:CausalAttention",
            "--lesson",
            "causal",
            "-j",
            "2",
            "--lang",
            "zh",
            "--format",
            "html",
            "-o",
            str(out),
        ],
    )
    index = (out / "index.html").read_text()
    assert (
        res.exit_code == 1 and "全班检查：课程 causal" in index and 'lang="zh' in index and "Class check" not in index
    )
