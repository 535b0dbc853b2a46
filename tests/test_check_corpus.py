"""Every implementation in ``tests/check_corpus`` gets the verdict its first line expects.

Each corpus file starts with ``# expect: lesson=L name=N exit=E [stage=S diagnosis=D]``:
the correct ones (exit 0) are written in different styles, the buggy ones
(exit 1) carry one mistake of the catalogue, or two (the first is named).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app

CORPUS = Path(__file__).parent / "check_corpus"
FILES = sorted(CORPUS.glob("*.py"))


def expectation(path: Path) -> dict[str, str]:
    """The ``key=value`` pairs of the file's ``# expect:`` line."""
    head = path.read_text(encoding="utf-8").splitlines()[0]
    assert head.startswith("# expect:"), f"{path.name} has no expect line"
    return dict(kv.split("=", 1) for kv in head.split(":", 1)[1].split())


def case(path: Path) -> object:
    """A corpus file as a test case; ``xfail=why`` marks a known gap (strict: it must still fail)."""
    why = expectation(path).get("xfail")
    marks = [pytest.mark.xfail(reason=why.replace("-", " "), strict=True)] if why else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [case(p) for p in FILES])
def test_corpus_verdict(path: Path) -> None:
    want = expectation(path)
    args = ["check", f"{path}:{want['name']}", "--lesson", want["lesson"], "--format", "json"]
    args += ["--rope-style", want["style"]] if "style" in want else []  # lesson rope: the pairing the code uses
    res = CliRunner().invoke(app, args)
    assert res.exit_code == int(want["exit"]), res.output
    doc = json.loads(res.stdout)
    assert doc["ok"] is (want["exit"] == "0")
    if want["exit"] == "0":
        assert doc["first_divergence"] is None and doc["diagnosis"] is None
        return
    if want["stage"] == "structure":  # another computation, or only at the lesson's sizes: no first divergence
        assert doc["first_divergence"] is None and doc["structure"] == want["diagnosis"]
    else:
        assert doc["first_divergence"]["stage"] == want["stage"] and doc["structure"] is None
    assert doc["diagnosis"]["code"] == want["diagnosis"]


def test_corpus_covers_the_catalogue() -> None:
    from tracer.compare.check.catalogue import known

    wants = [expectation(p) for p in FILES]
    correct = [w for w in wants if w["exit"] == "0"]
    assert len(FILES) >= 20 and len(correct) >= 6
    # every entry has its student: a forward mistake here, a backward one (grad_) in tests/check_backward
    from tests.test_check_backward import MISTAKES

    backward = {code for code, _, _ in MISTAKES.values()}
    assert {c for c in known() if c.startswith("grad_")} == backward
    assert set(known()) - backward <= {w.get("diagnosis") for w in wants}
    lessons = {"simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache"}
    assert {w["lesson"] for w in correct} == lessons
    assert sum(1 for p in FILES if "two_bugs" in p.stem) >= 2


def test_docs_list_the_catalogue() -> None:
    from tracer.compare.check.catalogue import known

    doc = (Path(__file__).parent.parent / "docs" / "check.md").read_text(encoding="utf-8")
    for entry in known().values():
        assert f"| `{entry.code}` |" in doc


def test_changelog_counts_the_corpus() -> None:
    """docs/check.md's corpus and catalogue sizes are exact; the CHANGELOG's are never more than what the check holds.

    The CHANGELOG is written by the lead at merge time from the branches'
    reports, so on a branch it may lag behind (never run ahead of) the corpus.
    """
    import re

    from tracer.compare.check.catalogue import known

    stagewise = sum(1 for e in known().values() if not {"structure", "generation"} & set(e.stages))
    docs = " ".join((Path(__file__).parent.parent / "docs" / "check.md").read_text(encoding="utf-8").split())
    assert re.findall(r"holds (\d+) implementations", docs) == [str(len(FILES))]
    assert re.findall(r"The catalogue's (\d+) entries", docs) == [str(stagewise)]
    text = " ".join((Path(__file__).parent.parent / "CHANGELOG.md").read_text(encoding="utf-8").split())
    said = re.findall(r"A corpus of (\d+) student implementations", text)
    assert len(said) == 1 and int(said[0]) <= len(FILES), (
        f"CHANGELOG says {said}, tests/check_corpus holds {len(FILES)}"
    )
    entries = re.findall(r"\((\d+) in the catalogue", text)
    assert len(entries) == 1 and int(entries[0]) <= stagewise, entries
    xfails = [p.stem for p in FILES if "xfail" in expectation(p)]
    assert ("strict expected failure" in text) == bool(xfails), xfails
