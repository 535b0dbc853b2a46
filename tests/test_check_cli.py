"""``attn-trace check``: output formats, languages, and one-line exit-2 errors for bad input."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app

CORPUS = Path(__file__).parent / "check_corpus"
GOOD = f"{CORPUS / 'causal_book.py'}:CausalAttention"
BAD = f"{CORPUS / 'causal_mask_zero.py'}:CausalAttention"

HEAD = "import torch\nimport torch.nn as nn\n\n"
BOOK_INIT = (
    "    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):\n"
    "        super().__init__()\n"
    "        self.W_query = nn.Linear(d_in, d_out, bias=False)\n"
    "        self.W_key = nn.Linear(d_in, d_out, bias=False)\n"
    "        self.W_value = nn.Linear(d_in, d_out, bias=False)\n"
)
# a dict, not a tuple: a tuple is read at its first element
FORWARD_DICT = '    def forward(self, x):\n        q = self.W_query(x)\n        return {"context": q}\n'


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["check", *args])
    return res.exit_code, res.stdout, res.stderr


def test_text_match_and_divergence() -> None:
    code, out, _ = run(GOOD, "--lesson", "causal")
    assert code == 0 and "MATCHES the lesson at every stage" in out
    assert "W_query ← W_query.weight (nn.Linear weight, read as weight.T)" in out
    code, out, _ = run(BAD, "--lesson", "causal")
    out = " ".join(out.split())  # the text wraps at 80 columns: compare its words
    assert code == 1
    assert "First divergence: causal mask (masked, reference step batch.neg.omega)" in out
    assert "lesson: batch.neg.omega[1,1,2] = batch.omega[1,1,2] unless 2 > 1, then -inf = -inf" in out
    assert "yours: attn_scores.masked_fill[1,1,2] = mask.bool.getitem[1,2] ? 0 : attn_scores[1,1,2] = 0.0000" in out
    assert "(your tensor attn_scores.masked_fill" in out
    assert "Diagnosis [mask_zero]: The masked scores are filled with 0 instead of −∞" in out
    assert "Wrong as a consequence: scaling by √d_k, attention weights, dropout, context vectors" in out


def test_chinese() -> None:
    code, out, _ = run(BAD, "--lesson", "causal", "--lang", "zh")
    assert code == 1
    assert "与课程不一致" in out and "被掩码的注意力分数填成了 0 而不是 −∞" in out


def test_json_schema() -> None:
    code, out, _ = run(BAD, "--lesson", "causal", "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["schema"] == "attn-trace-check" and doc["schema_version"] == 1
    assert set(doc) == {
        "schema", "schema_version", "lesson", "name", "ok", "roles", "stages",
        "first_divergence", "diagnosis", "consequences", "notes", "opaque", "structure", "built", "heads",
        "given", "backward",
    }  # fmt: skip
    assert doc["backward"] is False and doc["first_divergence"]["detail"] == {}
    fd = doc["first_divergence"]
    assert fd["element"] == "batch.neg.omega[1,1,2]" and fd["reference"] == "-inf"
    assert fd["student"] == 0.0 and fd["student_tensor"] == "attn_scores.masked_fill"
    assert fd["student_step"] == "attn_scores.masked_fill[1,1,2]"
    assert doc["diagnosis"]["steps"] == ["batch.neg.omega", "batch.neg.scaled"]
    assert [s["status"] for s in doc["stages"]][:5] == ["match"] * 4 + ["differs"]


def test_html_page(tmp_path: Path) -> None:
    out = tmp_path / "check.html"
    code, _, err = run(BAD, "--lesson", "causal", "--format", "html", "-o", str(out))
    assert code == 1 and "wrote" in err
    page = out.read_text(encoding="utf-8")
    found = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    csp = html.unescape(found.group(1)) if found else ""
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)
    assert page.count('class="card first"') == 1 and "<math" in page
    assert 'class="bad"' in page  # differing cells are marked
    assert page.startswith('<!DOCTYPE html>\n<html lang="en">'), page[:60]
    code, _, _ = run(BAD, "--lesson", "causal", "--format", "html", "-o", str(out))
    assert code == 2  # exists: needs --force


def test_html_page_in_chinese(tmp_path: Path) -> None:
    out = tmp_path / "check.html"
    code, _, _ = run(BAD, "--lesson", "causal", "--format", "html", "--lang", "zh", "-o", str(out))
    assert code == 1 and out.read_text(encoding="utf-8").startswith('<!DOCTYPE html>\n<html lang="zh-Hans">')


def test_lessons_and_languages_are_the_librarys() -> None:
    """The choices come from the lesson registry and the string tables, not from a copy of them."""
    from tracer.cli.check import check
    from tracer.present.strings import LANGS
    from tracer.record import registry

    choices = {p.name: getattr(p.type, "choices", None) for p in check.params}
    assert list(choices["lesson"]) == registry.names() and list(choices["lang"]) == list(LANGS)


def write(tmp_path: Path, body: str, name: str = "student.py") -> str:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return str(path)


BAD_INPUTS = {
    "missing file": (lambda t: f"{t}/nope.py:X", "no such file"),
    "no colon": (lambda t: f"{t}/nope.py", "check wants FILE.py:NAME"),
    "no such name": (lambda t: write(t, HEAD) + ":Missing", "defines no 'Missing'"),
    "syntax error": (lambda t: write(t, "def broken(:\n") + ":broken", "failed to import: SyntaxError"),
    "not a class": (
        lambda t: write(t, HEAD + "def f(x):\n    return x\n") + ":f",
        "f does not take the lesson's arguments",
    ),
    "wrong signature": (
        lambda t: (
            write(t, HEAD + "class A(nn.Module):\n    def __init__(self, d_in):\n        super().__init__()\n") + ":A"
        ),
        "does not take the lesson's arguments (d_in, d_out, context_length, dropout)",
    ),
    "crash in forward": (
        lambda t: (
            write(t, HEAD + "class A(nn.Module):\n" + BOOK_INIT + "    def forward(self, x):\n        1 / 0\n") + ":A"
        ),
        "A raised ZeroDivisionError: division by zero",
    ),
    "not a tensor": (
        lambda t: write(t, HEAD + "class A(nn.Module):\n" + BOOK_INIT + FORWARD_DICT) + ":A",
        "returned dict, not a tensor",
    ),
    "computes nothing": (
        lambda t: (
            write(t, HEAD + "class A(nn.Module):\n" + BOOK_INIT + "    def forward(self, x):\n        return 3\n")
            + ":A"
        ),
        "computed nothing in torch",
    ),
    "no weights": (
        lambda t: (
            write(t, HEAD + "class A(nn.Module):\n    def __init__(self, *a):\n        super().__init__()\n") + ":A"
        ),
        "cannot find query, key and value weights",
    ),
    "ambiguous roles": (
        lambda t: (
            write(
                t,
                HEAD
                + "class A(nn.Module):\n    def __init__(self, d_in, d_out, c, p):\n        super().__init__()\n"
                + "".join(f"        self.w{n} = nn.Linear(d_in, d_out, bias=False)\n" for n in range(4)),
            )
            + ":A"
        ),
        "cannot tell which weights are query, key and value",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line(tmp_path: Path, case: str) -> None:
    make, message = BAD_INPUTS[case]
    code, out, err = run(make(tmp_path), "--lesson", "causal")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err
    assert "Traceback" not in err


def test_verbose_shows_the_students_traceback(tmp_path: Path) -> None:
    make, _ = BAD_INPUTS["crash in forward"]
    code, _, err = run(make(tmp_path), "--lesson", "causal", "--verbose")
    assert code == 2 and "Traceback" in err and "1 / 0" in err and "student.py" in err


def test_lesson_is_required() -> None:
    code, _, err = run(GOOD)
    assert code == 2 and "--lesson" in err


@pytest.mark.parametrize(
    "body",
    [
        "raise SystemExit(0)\n",
        HEAD + "import sys\n\nclass A(nn.Module):\n    def __init__(self, d_in, d_out, *a, **k):\n"
        "        super().__init__()\n"
        "        self.W_query = nn.Linear(d_in, d_out, bias=False)\n"
        "        self.W_key = nn.Linear(d_in, d_out, bias=False)\n"
        "        self.W_value = nn.Linear(d_in, d_out, bias=False)\n"
        "    def forward(self, x):\n        sys.exit(0)\n",
    ],
    ids=["at-import", "in-forward"],
)
def test_a_student_file_that_exits_is_one_line_exit_2(tmp_path: Path, body: str) -> None:
    """SystemExit(0) from the student's code is the student's failure, not a clean exit of ours."""
    code, out, err = run(write(tmp_path, body) + ":A", "--lesson", "causal")
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and "SystemExit" in err, err


@pytest.mark.parametrize("option", ["--timeout", "--memory"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "-1"])
def test_limits_that_are_no_numbers_are_refused_before_any_submission_runs(
    option: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracer import sandbox

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("a submission ran")

    monkeypatch.setattr(sandbox, "pool", never)
    folder = Path(__file__).parent / "check_class"
    for spec in (f"{folder / 'correct.py'}:CausalAttention", f"{folder}:CausalAttention"):
        res = CliRunner().invoke(app, ["check", spec, "--lesson", "causal", option, value])
        errors = [line for line in res.stderr.splitlines() if line.startswith("Error")]
        assert res.exit_code == 2 and len(errors) == 1 and f"'{value}' is not a number from 0 to" in errors[0]
