"""The backward section of a page: every backward stage a section, in both languages, its numbers doors.

A trace without a backward pass keeps its forward page (the golden reports
hold that); these tests read pages of traces made with ``backward=True``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.lessons.simple.page import page as walkthrough
from tracer.present import report
from tracer.present.report import narrative_of
from tracer.present.views import backward, lesson
from tracer.present.views.model import Equation, Figure, Page, Table

BACKWARD = ("simple", "trainable", "causal", "window", "gqa", "rope", "multihead", "flash", "kvcache")


def page_of(name: str, lang: str = "en", **options: object) -> Page:
    t = tracer.trace_lesson(name, backward=True, **options)
    build = walkthrough if name == "simple" else lesson.build  # the tutorial's own sections, finished alike
    return build(t, narrative_of(t, lang))


def section_ids(page: Page) -> list[str]:
    return [s.anchor for s in page.sections]


@pytest.mark.parametrize("name", BACKWARD)
def test_every_backward_stage_is_a_section_after_the_forward_ones(name: str) -> None:
    t = tracer.trace_lesson(name, backward=True)
    stages = t.meta["backward"]["stages"]
    for lang in ("en", "zh"):
        page = page_of(name, lang)
        ids = section_ids(page)
        assert ids[-len(stages) :] == stages, (lang, ids)
        names = [f.name for f in page.figures]
        assert len(names) == len(set(names)), names  # every figure its own file and its own element ids
        first = page.sections[-len(stages)]
        assert t.meta["backward"]["upstream"] in first.blocks[0].text  # the intro names the upstream gradient
    forward = page_of(name)
    plain = tracer.trace_lesson(name)
    if name != "simple":
        assert section_ids(lesson.build(plain, narrative_of(plain, "en"))) == section_ids(forward)[: -len(stages)]


def test_the_softmax_stage_writes_the_row_sum_and_draws_p_before_ds() -> None:
    page = page_of("trainable")
    sec = next(s for s in page.sections if s.anchor == "dnormalize")
    worked = [b.anchor for b in sec.blocks if isinstance(b, Equation)]
    assert "dscaled-dot-2" in " ".join(worked) or any("dscaled.dot[2]" in str(b) for b in sec.blocks)
    figs = [b.name for b in sec.blocks if isinstance(b, Figure)]
    assert figs == ["fig-backward-alpha", "fig-dscaled"]  # the weights P, then their scores' gradient dS
    tables = [b for b in sec.blocks if isinstance(b, Table)]
    assert len(tables) >= 3  # the row sum, dP − row sum, dS
    # the English and the Chinese page tell the same stage
    zh = next(s for s in page_of("trainable", "zh").sections if s.anchor == "dnormalize")
    assert "行求和" in str(zh.title) and "row-sum" in str(sec.title)


def test_doors_carry_every_gradient_the_page_shows() -> None:
    page = page_of("causal")
    doors = json.loads(page.doors.replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u0026", "&"))
    for step in ("domega[3,2]", "dneg.scaled.dot[3]", "dW_query[1,2]", "dx[3,1]", "ddropout.kept[3,1]"):
        assert step in doors["ids"], step


def test_a_focus_row_with_no_gradient_hands_its_equations_to_the_nearest_live_row() -> None:
    t = tracer.trace_lesson("causal", backward=True)
    up = t.tensor("ddropout.z")
    assert not up[1].any() and up[2].any()  # dropout dropped every weight of query 2: nothing flows back there
    assert backward.written_row(t) == 3
    page = page_of("causal")
    intro = page.sections[section_ids(page).index("output")].blocks[0].text
    assert "row 3" in intro and "“starts”" in intro
    sec = next(s for s in page.sections if s.anchor == "dnormalize")
    worked = [b.anchor for b in sec.blocks if isinstance(b, Equation)]
    assert worked and all("-3" in a for a in worked), worked
    assert backward.written_row(tracer.trace_lesson("trainable", backward=True)) == 2  # a live focus row stays


def test_a_lesson_narrative_may_tell_a_backward_stage_itself() -> None:
    t = tracer.trace_lesson("trainable", backward=True)
    story = narrative_of(t, "en")
    own = {"title": "My own words", "text": "What I say about $\\bar{P}$.", "write": ["dalpha"]}
    told = tracer.present.narrative.from_dict(
        {**story.to_dict(), "stages": {**story.to_dict()["stages"], "dcontext": own}}, "trainable", "en"
    )
    page = lesson.build(t, told)
    sec = next(s for s in page.sections if s.anchor == "dcontext")
    assert "My own words" in str(sec.title)
    assert {b.anchor for b in sec.blocks if isinstance(b, Equation)} == {f"dalpha-2-{j}" for j in range(1, 7)}


def test_the_backward_report_has_its_own_folder_and_the_cli_writes_it(tmp_path: Path) -> None:
    t = tracer.trace_lesson("trainable", backward=True)
    assert report.slug(t) == report.slug(tracer.trace_lesson("trainable")) + "-backward"
    run = CliRunner().invoke
    done = run(app, ["report", "--lesson", "trainable,causal", "--backward", "--lang", "zh", "-o", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "causal-backward" / "zh" / "index.md").exists()
    html = (tmp_path / "trainable-backward" / "zh" / "index.html").read_text(encoding="utf-8")
    assert 'id="dnormalize"' in html and "反向穿过 softmax" in html
    saved = tmp_path / "t.json"
    t.save(saved)
    done = run(app, ["report", "--from", str(saved), "--format", "md", "-o", str(tmp_path / "from")])
    assert done.exit_code == 0 and "## 7. Backward through the weighted sum" in (
        tmp_path / "from" / "index.md"
    ).read_text(encoding="utf-8")


def test_figures_of_a_backward_trace_are_the_pages(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    done = CliRunner().invoke(app, ["figures", "--backward", "--format", "svg", "-o", str(tmp_path)])
    assert done.exit_code == 0, done.output
    made = sorted(p.name for p in tmp_path.iterdir())
    assert "fig-backward-alpha.svg" in made and "fig-domega.svg" in made
    page = page_of("simple")
    assert sorted(f"{f.name}.svg" for f in page.figures) == made  # the same names as the page's figures


def test_the_backward_flags_are_refused_where_they_cannot_apply(tmp_path: Path) -> None:
    run = CliRunner().invoke
    done = run(app, ["report", "--lesson", "model", "--backward", "-o", str(tmp_path)])
    assert done.exit_code == 2 and "no backward pass yet" in done.output
    assert len(done.output.strip().splitlines()) == 1
