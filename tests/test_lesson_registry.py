"""Lessons come from one registry, the entry point group ``attn_trace.lessons``, and keep one protocol."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.errors import InputError
from tracer.record import registry
from tracer.record.lesson import Lesson, PackagedLesson

ROOT = Path(__file__).resolve().parent.parent
BUILT_IN = ["simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache", "model"]
UNCHECKED = ("model",)
"""Built-in lessons with no student check: lesson model traces a trained model's weights, not a module one writes."""


def test_the_built_in_lessons_are_registered_as_entry_points_by_name() -> None:
    assert set(BUILT_IN) <= set(registry.names()) and registry.names()[: len(BUILT_IN)] == BUILT_IN
    for name in BUILT_IN:
        lesson = registry.get(name)
        assert isinstance(lesson, Lesson) and lesson.name == name
        assert isinstance(lesson, PackagedLesson) and lesson.package == f"tracer.lessons.{name}"


def test_listing_the_lessons_imports_no_torch() -> None:
    code = (
        "import sys; from tracer.record import registry; "
        "print(len([l.summary for l in registry.all_lessons()]), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    count, torch_loaded = out.stdout.split()
    assert int(count) >= len(BUILT_IN) and torch_loaded == "False"


def test_the_lessons_command_lists_every_registered_lesson_with_its_summary() -> None:
    res = CliRunner().invoke(app, ["lessons"])
    assert res.exit_code == 0
    rows = res.output.replace("\n  ", " ").splitlines()  # a long summary goes on, indented, on the next line
    got = [" ".join(r.split()).split(" ", 1) for r in rows]
    assert [name for name, _ in got] == registry.names() == list(BUILT_IN)  # the course's order
    assert all(summary == " ".join(registry.get(name).summary.split()) for name, summary in got)


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_lesson_has_both_narratives_and_notebook_cells(name: str) -> None:
    lesson = registry.get(name)
    en, zh = lesson.narrative("en"), lesson.narrative("zh")
    assert en is not None and zh is not None and set(en["stages"]) == set(zh["stages"])
    assert lesson.narrative("fr") is None and lesson.narrative("../x") is None
    spec = lesson.check  # the lesson's check description: its own name, one of the check's ways of running code
    from tracer.compare.check.lessons import DRIVERS, Spec

    if name in UNCHECKED:
        assert spec is None
        return
    assert isinstance(spec, Spec) and spec.name == name and spec.driver in DRIVERS


@pytest.mark.parametrize("name", [n for n in BUILT_IN if n != "simple"])
def test_the_options_dataclass_agrees_with_what_the_pipeline_prepares(name: str) -> None:
    """The documented defaults are the pipeline's: a default changed in one place only fails here."""
    lesson = registry.get(name)
    assert isinstance(lesson, PackagedLesson) and lesson.options is not None
    params = inspect.signature(lesson.module.prepare).parameters
    taken = {p.name: p.default for p in params.values() if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "values"}
    documented = {f.name: f.default for f in dataclasses.fields(lesson.options)}
    assert documented == taken


def test_an_option_the_lesson_does_not_document_is_refused_before_it_runs() -> None:
    with pytest.raises(InputError, match="lesson 'simple' takes no option d_out"):
        tracer.trace_lesson("simple", d_out=3)
    with pytest.raises(InputError, match="lesson 'causal' takes no option block, heads"):
        tracer.trace_lesson("causal", heads=2, block=1)


def test_an_unknown_lesson_is_one_line_and_exit_2() -> None:
    with pytest.raises(InputError, match="unknown lesson 'nope': choose from simple, trainable, causal"):
        tracer.trace_lesson("nope")
    res = CliRunner().invoke(app, ["trace", "--lesson", "nope"])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [
        f"Error: unknown lesson 'nope': choose from {', '.join(registry.names())}"
    ]


def test_a_broken_plug_in_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = dict(registry._entries())
    entries["broken"] = EntryPoint("broken", "no_such_module_anywhere:LESSON", registry.GROUP)
    entries["impostor"] = EntryPoint("impostor", "tracer.lessons.simple:LESSON", registry.GROUP)
    monkeypatch.setattr(registry, "_entries", lambda: entries)
    registry.get.cache_clear()
    try:
        with pytest.raises(InputError, match=r"lesson 'broken' \(no_such_module_anywhere:LESSON\) cannot be loaded"):
            registry.get("broken")
        with pytest.raises(InputError, match="is not a Lesson named 'impostor'"):
            registry.get("impostor")
    finally:
        registry.get.cache_clear()
