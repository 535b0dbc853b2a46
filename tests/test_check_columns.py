"""``check``'s text fits 80 columns, in English and Chinese, and its stage table's columns align.

Widths are terminal columns (:func:`tracer.present.termtext.width`: a
Chinese character takes two), so the zh stage table pads its stage names to
the same 18 columns as the English one.  Lines break between the terms of an
equation or between words, never inside a number or a name.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

import tracer
from tracer.compare.check.student import clean_modules, load
from tracer.present.termtext import COLUMNS, width

CORPUS = Path(__file__).parent / "check_corpus"
FILES = sorted(CORPUS.glob("*.py"))
ROW = re.compile(r"^  [✓✗·–] ")
STEP_AT = 2 + 2 + 18 + 1
"""The column where a stage row's reference step starts: indent, mark, the padded stage name, a space."""


def expect(path: Path) -> dict[str, str]:
    head = path.read_text(encoding="utf-8").splitlines()[0]
    return dict(kv.split("=", 1) for kv in head.split(":", 1)[1].split())


@pytest.fixture(scope="module")
def texts() -> dict[tuple[str, str, bool], str]:
    out = {}
    for path in FILES:
        want = expect(path)
        obj, source = load(f"{path}:{want['name']}")
        r = tracer.check(obj, lesson=want["lesson"], source=source)
        for lang in ("en", "zh"):
            for verbose in (False, True):
                out[path.name, lang, verbose] = r.explain(lang, verbose)
        clean_modules()
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_line_fits_80_columns(texts: dict[tuple[str, str, bool], str], lang: str) -> None:
    long = [
        (name, line) for (name, lg, _), text in texts.items() if lg == lang for line in text.splitlines()
        if width(line) > COLUMNS
    ]  # fmt: skip
    assert not long, long[:5]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_stage_table_aligns(texts: dict[tuple[str, str, bool], str], lang: str) -> None:
    rows = 0
    for (name, lg, _), text in texts.items():
        if lg != lang:
            continue
        for line in text.splitlines():
            if ROW.match(line):
                rows += 1
                cut = next(n for n in range(len(line)) if width(line[:n]) >= STEP_AT)
                assert line[cut - 1] == " " and line[cut] != " ", (name, line)
    assert rows > 500


def test_no_number_or_name_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrapping only moves text to new lines: the same characters, and no break between two letters or digits."""
    import tracer.present.checktext as checktext

    for path in [CORPUS / "multihead_scale_dout.py", CORPUS / "causal_fixed_dropout.py", CORPUS / "gqa_repeat.py"]:
        want = expect(path)
        obj, source = load(f"{path}:{want['name']}")
        r = tracer.check(obj, lesson=want["lesson"], source=source)
        for lang in ("en", "zh"):
            wrapped = r.explain(lang, True)
            with monkeypatch.context() as m:
                m.setattr(checktext, "fit", lambda text: text)
                raw = r.explain(lang, True)
            assert "".join(wrapped.split()) == "".join(raw.split())
            assert max(width(line) for line in raw.splitlines()) > COLUMNS  # something was wrapped
            lines = wrapped.splitlines()
            for a, b in itertools.pairwise(lines):
                glued = a.rstrip()[-12:] + b.lstrip()[:12]
                if b.startswith("    ") and re.search(r"[A-Za-z0-9_]$", a) and re.match(r"\s*[A-Za-z0-9_]", b):
                    assert glued not in "".join(raw.split("\n")), (path.name, a, b)
        clean_modules()
