"""A window one key too wide is named as flash-attn's way of counting it, in both languages; one too narrow is not.

flash-attn's ``window_size=(w, 0)`` lets a query see the w keys before it
and itself (w + 1 keys); Hugging Face's ``sliding_window``, like lesson
window, counts the query among its w.  The check still calls it off by one
(the lesson fixes its convention), and says where the other count comes from.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.compare.check.windows import WIDER
from tracer.present.messages import render

CORPUS = Path(__file__).parent / "check_corpus"


def _said(case: str, lang: str) -> str:
    path = CORPUS / f"{case}.py"
    name = path.read_text(encoding="utf-8").split("name=")[1].split()[0]
    res = CliRunner().invoke(app, ["check", f"{path}:{name}", "--lesson", "window", "--lang", lang, "--format", "json"])
    assert res.exit_code == 1, res.output
    diagnosis = json.loads(res.stdout)["diagnosis"]
    assert diagnosis["code"] == "window_width_off"
    return str(diagnosis["sentence"])


@pytest.mark.parametrize(("lang", "words"), [("en", "flash-attn"), ("zh", "flash-attn 的")])
def test_one_key_too_many_names_the_other_convention(lang: str, words: str) -> None:
    said = _said("window_width_plus", lang)
    assert words in said and said.endswith(render(WIDER, lang))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_key_too_few_is_only_off_by_one(lang: str) -> None:
    assert "flash-attn" not in _said("window_width_minus", lang)
