"""``check --lang zh`` speaks Chinese: no English words left in the text, the HTML page or the JSON's messages.

Every corpus file is checked once and rendered in Chinese.  A Latin word is
allowed only where it is code: a name from the student's code or the lesson
(tensors, parameters, steps, lessons, files), a name with an underscore (``d_k``), a word of the small code
vocabulary below, a number (``inf``, ``NaN``), a path, or inside an
expression (a run of Latin text holding brackets or ``=``), or the text of
an exception the student's code raised.  Anything else is English that a
Chinese reader would have to translate.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

import tracer
from tracer.compare.check.lessons import SPECS
from tracer.compare.check.student import clean_modules, load
from tracer.message import Message
from tracer.present.checkpage import render_check

CORPUS = Path(__file__).parent / "check_corpus"
FILES = sorted(CORPUS.glob("*.py"))

CODE = {
    "softmax", "dropout", "torch", "nn", "einsum", "inf", "nan", "NaN", "True", "False", "dim", "mod",
    "ModuleList", "Linear", "Parameter", "Dropout", "num_heads", "qkv_bias", "weight", "bias",
    "pos", "forward", "None",
}  # fmt: skip
"""Words of code and mathematics a Chinese text writes as they are (``dropout``: code; ``pos``: the slice
``mask[pos:pos + n, :pos + n]`` a kvcache sentence gives, named again in its prose; ``forward`` and ``None``:
the notes on what a student's forward was given)."""

WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]+")
LATIN_RUN = re.compile(r"[\x20-\x7e]+")


def expect(path: Path) -> dict[str, str]:
    head = path.read_text(encoding="utf-8").splitlines()[0]
    return dict(kv.split("=", 1) for kv in head.split(":", 1)[1].split())


LIBRARIES = ("flash-attn", "Hugging Face")
"""Libraries a diagnosis may name (a window's convention is flash-attn's, or Hugging Face's)."""


def names(r: Any) -> set[str]:
    """Every identifier the result may show: the student's and the lesson's names."""
    said = [r.name, r.built, *SPECS, *(x.param for x in r.roles), *(x.role for x in r.roles), *r.given, *LIBRARIES]
    said += [n.name for n in r.trace.nodes] + ([n.name for n in r.student.nodes] if r.student else [])
    said += [s.quantity.key for s in r.stages] + [s.evidence.id for s in r.stages if s.evidence]
    said += [w for v in r.hit.detail.values() for w in own(v)] if r.hit else []  # the student's own text, quoted
    return {w for text in said for w in re.split(r"[^A-Za-z0-9_]+", str(text)) if w}


def own(value: Any) -> list[str]:
    """The text arguments of a sentence's detail, inside its nested messages too (the student's words, code)."""
    if isinstance(value, Message):
        return [w for v in value.args.values() for w in own(v)]
    return [str(value)]


def english(text: str, known: set[str]) -> list[str]:
    """The Latin words of ``text`` that are not code."""
    found = []
    text = re.sub(r"[\w/-]+\.py\b|--[\w-]+|\.\w+", " ", text)  # a file, an option (--heads), an attribute
    for run in LATIN_RUN.findall(text):
        if re.search(r"[()\[\]=/]|Error:|Warning:", run):  # an expression, a path, an exception's own text
            continue
        for w in WORD.findall(run):
            if "_" not in w and w not in known and w not in CODE:  # d_k, attn_scores: a name in code
                found.append(w)
    return found


def page_text(page: str) -> str:
    page = re.sub(r"(?s)<(style|script|code|math|svg|title)\b.*?</\1>", " ", page)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.fixture(scope="module")
def rendered() -> dict[str, tuple[list[str], set[str]]]:
    out = {}
    for path in FILES:
        want = expect(path)
        if "xfail" in want:
            continue
        obj, source = load(f"{path}:{want['name']}")
        r = tracer.check(obj, lesson=want["lesson"], source=source)
        doc = r.to_json("zh")
        messages = [str((doc.get("diagnosis") or {}).get("sentence") or "")] + [x["how"] for x in doc["roles"]]
        out[path.name] = ([r.explain("zh", True), page_text(render_check(r, "zh")), *messages], names(r))
        clean_modules()
    return out


@pytest.mark.parametrize("form", ["text", "html", "json"])
def test_no_english_in_chinese_output(rendered: dict[str, tuple[list[str], set[str]]], form: str) -> None:
    pick = {"text": slice(0, 1), "html": slice(1, 2), "json": slice(2, None)}[form]
    bad = {name: sorted(set(english(" ".join(texts[pick]), known))) for name, (texts, known) in rendered.items()}
    bad = {name: words for name, words in bad.items() if words}
    assert not bad, bad


def test_the_filter_sees_english() -> None:
    known = {"attn_scores"}
    assert english("你的张量 attn_scores，产生于 x.py:3", known) == []
    assert english("nn.Linear weight, read as weight.T", known) == ["read", "as"]
    assert english("当 2 > 1 时为 -inf", known) == []
    assert english("unless 2 > 1, then -inf", known) == ["unless", "then"]
    assert english("应当使用 torch.cat([head(x) for head in heads], dim=-1)。", known) == []
