"""Each lesson describes its own check; the engines under ``tracer/compare/check`` read the description, not names."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from tests.test_layers import LESSON_NAMES
from tracer.compare.check import lessons, resize
from tracer.compare.check.run import spec_for
from tracer.errors import InputError
from tracer.record import registry
from tracer.record.lesson import PackagedLesson

ENGINES = Path(__file__).resolve().parent.parent / "tracer" / "compare" / "check"
ENGINE_LESSON_NAMES = 12
"""Lesson names as string constants in the check's engines (109 before the descriptions moved); only falls."""


def test_every_built_in_lesson_carries_its_check_description() -> None:
    for name in sorted(LESSON_NAMES):
        spec = registry.get(name).check
        assert isinstance(spec, lessons.Spec) and spec.name == name and spec.driver in lessons.DRIVERS
        assert lessons.SPECS[name] is spec
    assert list(lessons.SPECS) == [n for n in registry.names() if n in LESSON_NAMES or n in lessons.SPECS]


def test_a_lesson_without_a_check_is_not_one_the_check_knows(monkeypatch: pytest.MonkeyPatch) -> None:
    bare = PackagedLesson(name="bare", summary="no check", pipeline="tracer.lessons.simple.pipeline", package="x")
    real = registry.get
    monkeypatch.setattr(registry, "get", lambda name: bare if name == "bare" else real(name))
    assert bare.check is None and "bare" not in lessons.SPECS
    with pytest.raises(KeyError):
        lessons.SPECS["bare"]
    with pytest.raises(InputError, match="unknown lesson"):
        spec_for("bare")


def test_the_engines_name_lessons_no_more_often_than_before() -> None:
    found = 0
    for path in ENGINES.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += sum(1 for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in LESSON_NAMES)
    assert found <= ENGINE_LESSON_NAMES


def test_the_pairing_belongs_to_the_lessons_that_turn_queries() -> None:
    assert spec_for("rope", rope_style="interleaved").style == "interleaved"
    assert spec_for("rope").style == "half"
    with pytest.raises(InputError, match="for lesson rope only"):
        spec_for("causal", rope_style="half")
    with pytest.raises(InputError, match="for lesson rope only"):
        spec_for("rope", rope_style="sideways")


def test_second_builds_are_the_lessons_own() -> None:
    window = lessons.SPECS["window"]
    assert window.rebuilds is not None and resize.builds(window) == window.rebuilds(window)
    assert [b["window_size"] for b in resize.builds(window)] == [window.window - 1, window.window + 1]
    assert resize.builds(lessons.SPECS["simple"]) == ()  # a lesson without second builds has none
    wider = replace(window, args=(3, 2, 6, 5))  # a description decides, not the lesson's name
    assert [b["window_size"] for b in resize.builds(wider)] == [4, 6]
