"""The string tables: same keys in every language, and a missing key fails loudly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tracer
from tracer.present import strings
from tracer.present.strings import MissingString, Strings


def test_languages_have_the_same_keys() -> None:
    en, zh = strings.table("en"), strings.table("zh")
    assert sorted(en) == sorted(zh)


def test_placeholders_match_across_languages() -> None:
    en, zh = strings.table("en"), strings.table("zh")
    names = re.compile(r"%\((\w+)\)s")
    for key in en:
        assert sorted(names.findall(en[key])) == sorted(names.findall(zh[key])), key


def test_every_key_used_in_code_exists() -> None:
    root = Path(tracer.__file__).parent.parent
    used: set[str] = set()
    for path in [*root.joinpath("tracer").rglob("*.py"), *root.joinpath("templates").glob("*.j2")]:
        used |= set(re.findall(r"""(?:\bs|ctx\.s|_)\(\s*f?["']([a-z_]+\.[a-z_0-9]+)["']""", path.read_text()))
    assert used, "no string keys found: the pattern is stale"
    assert used - set(strings.table("en")) == set()


def test_missing_key_raises() -> None:
    table = dict(strings.table("en"))
    del table["page.title"]
    with pytest.raises(MissingString, match=r"page\.title"):
        Strings("en", table)("page.title")


def test_missing_key_fails_a_render(tutorial: tracer.Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.lessons.simple import page as walkthrough

    table = dict(strings.table("zh"))
    del table["scores.why"]
    monkeypatch.setattr(strings, "table", lambda lang: table)
    with pytest.raises(MissingString, match=r"scores\.why"):
        walkthrough.build(tutorial, "zh")


def test_chinese_report_is_chinese(tutorial_report) -> None:  # type: ignore[no-untyped-def]
    html = tutorial_report("zh")["index.html"].decode()
    assert 'lang="zh-Hans"' in html
    assert strings.table("zh")["norm.div"] in html
    assert strings.table("en")["norm.div"] not in html
