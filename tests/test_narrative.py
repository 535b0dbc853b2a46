"""Lesson narratives: every language has the same keys, and every stage a lesson records has prose."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracer
from tests import tinymodels as tm
from tracer.errors import InputError
from tracer.present import narrative
from tracer.present.strings import LANGS
from tracer.record import registry

WRITTEN = [name for name in registry.names() if narrative.available(name)]


def test_the_tutorial_lesson_has_a_narrative() -> None:
    assert "simple" in WRITTEN


@pytest.mark.parametrize("lesson", WRITTEN)
def test_languages_have_the_same_keys(lesson: str) -> None:
    keys = [narrative.load(lesson, lang).keys() for lang in LANGS]
    assert all(k == keys[0] for k in keys)


@pytest.mark.parametrize("lesson", WRITTEN)
@pytest.mark.parametrize("lang", LANGS)
def test_every_stage_has_prose(lesson: str, lang: str) -> None:
    story = narrative.load(lesson, lang)
    for stage in tm.lesson_trace(lesson).stages:
        prose = story.stage(stage)
        assert prose.title.strip() and prose.text.strip()
        assert prose.text.count("$") % 2 == 0, f"{lesson}.{lang} {stage}: unbalanced $"


def test_unknown_language_and_missing_stage_are_errors() -> None:
    with pytest.raises(InputError, match="unknown language"):
        narrative.load("simple", "fr")
    with pytest.raises(InputError, match="no stage"):
        narrative.load("simple", "en").stage("nope")


def test_node_tables_are_checked() -> None:
    base = {"title": "t", "summary": "s", "stages": {"a": {"title": "A", "text": "x"}}}
    story = narrative.from_dict({**base, "nodes": {"z": {"caption": "The $z$", "row": 3}}}, "mine", "en")
    assert story.node("z").caption == "The $z$" and story.node("z").row == 3
    assert story.node("other").caption == ""
    assert narrative.from_dict(story.to_dict(), "mine", "en") == story
    with pytest.raises(InputError, match="unknown keys colour"):
        narrative.from_dict({**base, "nodes": {"z": {"colour": "red"}}}, "mine", "en")
    with pytest.raises(InputError, match="row must be"):
        narrative.from_dict({**base, "nodes": {"z": {"row": "two"}}}, "mine", "en")
    with pytest.raises(InputError, match="caption must be text"):
        narrative.from_dict({**base, "nodes": {"z": {"caption": 3}}}, "mine", "en")


@pytest.mark.parametrize("name", ["../../../../../srv/x/evil", "/etc/passwd", "simple/../simple", "..", ""])
def test_a_lesson_name_from_a_file_never_becomes_a_path(name: str) -> None:
    with pytest.raises(InputError, match="unknown lesson") as e:
        narrative.load(name, "en")
    assert "toml" not in str(e.value)
    assert not narrative.available(name)


def test_report_of_a_trace_naming_a_foreign_lesson_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tests.hostile import seal
    from tracer.cli import app
    from tracer.core import serialize

    doc = serialize.to_dict(tracer.trace_lesson("trainable"))
    doc["meta"]["lesson"] = "../../../../../srv/x/evil"
    src = tmp_path / "t.json"
    src.write_text(seal(doc), encoding="utf-8")
    res = CliRunner().invoke(app, ["report", "--from", str(src), "-o", str(tmp_path / "r")])
    assert res.exit_code == 2 and "unknown lesson" in res.output and ".toml" not in res.output
    assert not (tmp_path / "r").exists()
