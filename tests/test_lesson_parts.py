"""A lesson's page parts and options reach the engines through the lesson, never through its name in engine code."""

from __future__ import annotations

import dataclasses
import re

import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app, lessonopts
from tracer.errors import InputError
from tracer.lessons.simple import page as walkthrough
from tracer.present.checktext import no_roles
from tracer.present.report import narrative_of
from tracer.present.strings import Strings
from tracer.present.views.order import page_order, stage_order
from tracer.record import registry
from tracer.record.lesson import PackagedLesson, page_part


@pytest.fixture(scope="module")
def tutorial() -> tracer.Trace:
    return tracer.trace_self_attention()


def test_the_tutorials_page_walks_the_order_its_lesson_names(tutorial: tracer.Trace) -> None:
    """The notebook follows ``page_order``; the page shows its sections in the same order (then its recap)."""
    page = walkthrough.page(tutorial, narrative_of(tutorial, "en"))
    shown = [s.anchor for s in page.sections][: len(page_order(tutorial))]
    assert shown == [{"matrix": "pairs"}.get(s, s) for s in page_order(tutorial)]  # stage matrix: section "pairs"
    assert page_order(tutorial) != stage_order(tutorial)  # the overflow is recorded last, shown beside the softmax


def test_a_lesson_without_an_order_is_walked_as_recorded() -> None:
    t = tracer.trace_lesson("causal")
    assert page_order(t) == stage_order(t)


def test_registry_of_a_captured_or_narrated_trace_is_none(tutorial: tracer.Trace) -> None:
    """A trace that tells itself (a --pipeline's) or comes from torch code is not a lesson's, whatever it is called."""
    assert registry.of(tutorial) is registry.get("simple")
    for extra in ({"captured": True}, {"narrative": {"en": {}}}, {"lesson": "no-such-lesson"}):
        t = tracer.trace_self_attention()
        t.meta.update(extra)
        assert registry.of(t) is None


def test_page_parts_are_named_functions_or_nothing() -> None:
    plain = PackagedLesson(name="x", summary="x", pipeline="x", package="x")
    assert page_part(plain, "page") is None
    broken = dataclasses.replace(plain, facts="tracer.present.facts:no_such_function")
    with pytest.raises(InputError, match=r"names tracer\.present\.facts:no_such_function as its facts"):
        page_part(broken, "facts")
    with pytest.raises(ValueError, match="no page part"):
        page_part(plain, "pipeline")


def test_a_walkthrough_of_a_trace_without_its_nodes_is_one_line() -> None:
    said = r"^this walk-through reads node '\w+', which the trace of 'flash' does not have$"
    with pytest.raises(InputError, match=said):
        walkthrough.build(tracer.trace_lesson("flash"))


def test_every_lesson_option_is_on_the_command_line_with_its_meaning() -> None:
    """Each field of each lesson's Options dataclass is a flag of ``trace --help``, with its doc and lessons."""
    out = CliRunner().invoke(app, ["trace", "--help"], terminal_width=200).output
    said = " ".join(out.split())
    for lesson in registry.all_lessons():
        for f in dataclasses.fields(lesson.options) if lesson.options else ():
            flag = str(f.metadata.get("flag", "--" + f.name.replace("_", "-")))
            assert flag in out, flag
            doc = lessonopts.docs(lesson.options)[f.name]
            assert doc and doc.split()[0] in said
    assert "Lesson window: How many keys each query sees" in said


def test_a_lesson_option_named_like_a_general_one_takes_that_flag_once() -> None:
    """Lesson model's ``text`` is carried by the general ``--text``: one such flag, listed as the lesson's."""
    out = CliRunner().invoke(app, ["trace", "--help"], terminal_width=200).output
    assert len(re.findall(r"^\s+--text\b", out, re.M)) == 1
    assert [f.flag for f in lessonopts.fields() if f.name in lessonopts.GENERAL] == ["--text"]
    listed = CliRunner().invoke(app, ["lessons", "--options", "model"]).output
    assert re.search(r"^--text str \(default The capital of France is\): The sentence", listed, re.M)


def test_lessons_options_lists_a_lessons_own() -> None:
    res = CliRunner().invoke(app, ["lessons", "--options", "rope"])
    assert res.exit_code == 0
    assert re.search(r"^--rope-style half\|interleaved \(default half\): How components are paired", res.output, re.M)
    assert re.search(r"^--base float \(default 10000.0\)", res.output, re.M)
    none = CliRunner().invoke(app, ["lessons", "--options", "simple"]).output
    assert none == "lesson simple has no options of its own\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["lessons", "--options", "nope"], "Error: unknown lesson 'nope': choose from simple,"),
        (["trace", "--lesson", "causal", "--window", "2"], "Error: lesson 'causal' takes no option window"),
        (["trace", "--lesson", "window", "--window", "0"], "Error: --window must be a whole number"),
        (["trace", "--lesson", "rope", "--rope-style", "diagonal"], "Error: Invalid value for '--rope-style'"),
        (["trace", "--torch", "x.py:f", "--heads", "2"], "Error: --torch runs your code as it is: --heads do not"),
    ],
)
def test_a_bad_lesson_option_is_one_line_and_exit_2(args: list[str], said: str) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    assert res.output.startswith(said) and res.output.count("\n") == 1, res.output


def test_a_lesson_words_its_own_no_weights_sentence_in_the_tables() -> None:
    """``check.no_roles_<lesson>`` when the table has it (flash's), else the common sentence."""
    for lang in ("en", "zh"):
        s = Strings(lang)
        assert no_roles(s, "flash") == s("check.no_roles_flash")
        assert no_roles(s, "causal") == s("check.no_roles")
    assert no_roles(Strings("en", {"check.no_roles": "common"}), "flash") == "common"
