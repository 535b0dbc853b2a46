"""Errors that reach the user are message keys, so they are said in the reader's language.

An error raised with English words in the code (``InputError(f"{name} is
not ...")``) is English in a Chinese session.  The rule this file holds:
no error type the user can meet is built from a string literal or an
f-string anywhere in ``tracer/``; it is built from a
:class:`~tracer.message.Message` whose sentence lives in both tables.  And
a few representative errors, met through the command line with ``--lang
zh``, are one Chinese line with exit code 2.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.errors import InputError
from tracer.message import Message
from tracer.present.messages import render

PACKAGE = Path(__file__).resolve().parent.parent / "tracer"

USER_ERRORS = {"TracerError", "InputError", "TraceFormatError", "StepNotFound", "UserError"}
"""The error types the CLI prints as a one-line exit-2 message; their subclasses are found in the code."""

NEVER_SHOWN = {"Structural"}
"""Errors whose words nobody reads: the check catches a structural difference and says the catalogue's sentence
for its code (a message key) instead."""

HAN = re.compile(r"[\u4e00-\u9fff]")


def _name(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _words(node: ast.expr | None) -> bool:
    """Whether ``node`` is English written into the code: a string literal or an f-string, cut or joined."""
    if isinstance(node, ast.Subscript):  # f"..."[:200]
        return _words(node.value)
    if isinstance(node, ast.BinOp):  # "..." + name
        return _words(node.left) or _words(node.right)
    if isinstance(node, ast.IfExp):  # f"..." if flag else other
        return _words(node.body) or _words(node.orelse)
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def user_errors(trees: dict[Path, ast.Module]) -> set[str]:
    """:data:`USER_ERRORS` and every class of the package that derives from one of them, however deep."""
    found = set(USER_ERRORS)
    grew = True
    while grew:
        grew = False
        for tree in trees.values():
            for node in ast.walk(tree):
                new = isinstance(node, ast.ClassDef) and node.name not in found
                if new and any(_name(b) in found for b in node.bases):
                    found.add(node.name)
                    grew = True
    return found


def english_raises(trees: dict[Path, ast.Module]) -> list[str]:
    """``file:line`` of every user error built from words in the code (its first argument, or its super call)."""
    kinds = user_errors(trees) - NEVER_SHOWN
    out = []
    for path, tree in trees.items():
        for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name in kinds]:
            for call in ast.walk(cls):  # an error class that words its own message: super().__init__(f"...")
                if isinstance(call, ast.Call) and _name(call.func) == "__init__" and call.args and _words(call.args[0]):
                    out.append(f"{path.relative_to(PACKAGE.parent)}:{call.lineno}")
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and _name(call.func) in kinds and call.args and _words(call.args[0]):
                out.append(f"{path.relative_to(PACKAGE.parent)}:{call.lineno}")
    return sorted(set(out))


def _parsed(sources: dict[str, str]) -> dict[Path, ast.Module]:
    return {PACKAGE / name: ast.parse(text) for name, text in sources.items()}


def test_no_error_that_reaches_the_user_is_written_in_english_in_the_code() -> None:
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}
    assert english_raises(trees) == []


def test_the_scan_finds_words_in_an_error_however_it_is_raised() -> None:
    """A literal, an f-string, a subclass two levels down, an error that words itself: each is found."""
    trees = _parsed(
        {
            "a.py": 'raise InputError(f"{x} is bad")\nraise TraceFormatError("broken")\n',
            "b.py": "class Odd(InputError): ...\nclass Odder(Odd): ...\nraise Odder('no')\n",
            "c.py": "class Own(TracerError):\n    def __init__(self, p):\n        super().__init__(f'{p} exists')\n",
            "d.py": 'raise ValueError(f"{x} internal")\nraise InputError(Message("inputs.no_tokens"), arg="text")\n',
            "e.py": 'raise InputError(f"row {r}: {v!r}"[:200])\nraise InputError("bad " + name)\n',
            "f.py": 'raise UserError(f"{flag} {p}" if flag else str(e))\n',
        }
    )
    found = ["tracer/a.py:1", "tracer/a.py:2", "tracer/b.py:3", "tracer/c.py:3", "tracer/e.py:1", "tracer/e.py:2"]
    found.append("tracer/f.py:1")
    assert english_raises(trees) == found


def _zh(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "--lang", "zh"])
    return result.exit_code, result.output


def test_an_argument_error_names_the_cli_option_and_says_the_problem_in_chinese(tmp_path: Path) -> None:
    code, out = _zh(["report", "--text", "the cat sat", "--dim", "0", "-o", str(tmp_path / "r")])
    assert code == 2 and out.count("\n") == 1, out
    assert "--dim 必须是至少为 1 的整数，而不是 0" in out
    assert not (tmp_path / "r").exists()  # nothing half-written


def test_a_missing_inputs_file_is_one_chinese_line(tmp_path: Path) -> None:
    code, out = _zh(["report", "--inputs", str(tmp_path / "nope.json"), "-o", str(tmp_path / "r")])
    assert code == 2 and out.count("\n") == 1, out
    assert "没有这个文件：" in out and "nope.json" in out and "no such file" not in out


def test_a_bad_inputs_file_names_the_file_and_says_what_is_wrong_in_chinese(tmp_path: Path) -> None:
    """The error of the numbers (ragged rows) nests inside the file's error: both parts are Chinese."""
    bad = tmp_path / "rows.json"
    bad.write_text(json.dumps({"inputs": [[1, 2, 3], [4, 5]]}), encoding="utf-8")
    code, out = _zh(["report", "--inputs", str(bad), "-o", str(tmp_path / "r")])
    assert code == 2 and out.count("\n") == 1, out
    assert "'rows.json'：各行长短不一：第 2 行有 2 个值，第 1 行有 3 个" in out and "ragged" not in out


def test_a_file_that_is_no_trace_is_said_in_chinese(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text('{"nodes": []}', encoding="utf-8")
    code, out = _zh(["report", "--from", str(odd), "-o", str(tmp_path / "r")])
    assert code == 2 and out.count("\n") == 1, out
    assert "不是 attn-trace 的追踪文件" in out


def test_a_report_that_exists_says_how_to_overwrite_it_in_chinese(tmp_path: Path) -> None:
    first = ["report", "--lesson", "simple", "--format", "md", "-o", str(tmp_path / "r")]
    assert CliRunner().invoke(app, first).exit_code == 0
    code, out = _zh(first)
    assert code == 2 and out.count("\n") == 1, out
    assert "已经存在；要覆盖报告请用 --force" in out


def test_the_same_errors_stay_word_for_word_english_without_lang(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "--text", "the cat sat", "--dim", "0", "-o", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--dim must be a whole number of at least 1, got 0" in result.output


def test_an_error_wrapping_another_renders_the_inner_one_in_the_reader_language() -> None:
    inner = InputError(Message("inputs.inputs_empty_no_rows"))
    outer = Message("cli.grad_output", file="'g.json'", error=inner.said or "")
    assert render(outer, "en") == "--grad-output 'g.json': inputs are empty (no rows)"
    said = render(outer, "zh")
    assert said == "--grad-output 'g.json'：输入是空的（没有任何行）" and HAN.search(said)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_argument_error_from_the_api_reads_with_the_argument_name(lang: str) -> None:
    e = InputError(Message("inputs.must_whole_number_least", dim="0"), arg="dim")
    assert str(e) == "dim must be a whole number of at least 1, got 0"
    assert e.said is not None and e.problem == "must be a whole number of at least 1, got 0"
    assert render(e.said, lang).startswith("dim ")
