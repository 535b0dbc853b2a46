"""Published attention classes, as their projects publish them, get the right verdict from ``check``.

Each file of ``tests/check_published`` is one class in the style of a public
project (Hugging Face's GPT-2, Llama, BERT, T5, Gemma; Whisper; gpt-fast;
Meta's Llama 2; llama2.c; nanochat; timm's ViT; the lecture's GPT; d2l),
written here in our own words, or a copy of one with a single mistake.  Its
first lines say, one per lesson it is checked against, ``# expect: lesson=L
name=N exit=E [stage=S diagnosis=D] [xfail=why]``: exit 0 where the class
is the lesson, exit 1 naming the copy's mistake, exit 2 (one line, no
traceback) where the lesson does not fit the class.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app

CORPUS = Path(__file__).parent / "check_published"


def expectations(path: Path) -> list[dict[str, str]]:
    """The ``key=value`` pairs of each of the file's ``# expect:`` lines."""
    heads = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# expect:")]
    assert heads, f"{path.name} has no expect line"
    return [dict(kv.split("=", 1) for kv in head.split(":", 1)[1].split()) for head in heads]


def cases() -> list[object]:
    out = []
    for path in sorted(CORPUS.glob("*.py")):
        for want in expectations(path):
            why = want.get("xfail")
            marks = [pytest.mark.xfail(reason=why.replace("-", " "), strict=True)] if why else []
            out.append(pytest.param(path, want, id=f"{path.stem}-{want['lesson']}", marks=marks))
    return out


@pytest.mark.parametrize(("path", "want"), cases())
def test_published_verdict(path: Path, want: dict[str, str]) -> None:
    args = ["check", f"{path}:{want['name']}", "--lesson", want["lesson"], "--format", "json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == int(want["exit"]), res.output
    if want["exit"] == "2":  # the lesson does not fit: one line saying why, no traceback
        said = res.output.strip().splitlines()
        assert len(said) == 1 and said[0].startswith("Error: ") and "Traceback" not in res.output, res.output
        return
    doc = json.loads(res.stdout)
    assert doc["ok"] is (want["exit"] == "0")
    if want["exit"] == "0":
        assert doc["first_divergence"] is None and doc["diagnosis"] is None
        return
    assert doc["first_divergence"]["stage"] == want["stage"]
    assert doc["diagnosis"]["code"] == want["diagnosis"]


def test_the_corpus_is_as_wide_as_the_issue_asks() -> None:
    """At least 15 published classes, each checked; several single-mistake copies (named ``<class file>_<mistake>``)."""
    files = sorted(CORPUS.glob("*.py"))
    stems = {p.stem for p in files}
    copies = [p for p in files if any(p.stem.startswith(s + "_") for s in stems)]
    originals = [p for p in files if p not in copies]
    assert len(originals) >= 15 and len(copies) >= 6
    assert all(w["exit"] == "1" and "diagnosis" in w for p in copies for w in expectations(p))
    assert sum(w["exit"] == "0" for p in originals for w in expectations(p)) >= 15
