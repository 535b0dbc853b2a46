"""Reports of the lessons after the tutorial's: golden files, narratives, numbers back, the CLI."""

from __future__ import annotations

import html as htmllib
import re
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer
from tests import written
from tests.gold import compare
from tracer.core import portable
from tracer.present import narrative, report
from tracer.present.strings import LANGS

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ("trainable", "causal", "multihead")


@cache
def lesson_trace(lesson: str) -> tracer.Trace:
    """The lesson's trace on the tutorial's inputs."""
    return tracer.trace_lesson(lesson)


@cache
def lesson_report(lesson: str, lang: str) -> dict[str, bytes]:
    """The report files of the lesson's default example."""
    return report.build(lesson_trace(lesson), lang)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", LESSONS)
def test_committed_lesson_reports_are_current(lesson: str, lang: str) -> None:
    compare(ROOT / "reports" / lesson / lang, lesson_report(lesson, lang))


@pytest.mark.parametrize("lesson", LESSONS)
def test_narratives_have_the_same_keys_and_node_lists(lesson: str) -> None:
    en, zh = narrative.load(lesson, "en"), narrative.load(lesson, "zh")
    assert en.keys() == zh.keys()
    assert {n: s.lists() for n, s in en.stages.items()} == {n: s.lists() for n, s in zh.stages.items()}
    same = {n: (x.formula, x.row) for n, x in en.nodes.items()}
    assert same == {n: (x.formula, x.row) for n, x in zh.nodes.items()}
    t = lesson_trace(lesson)
    assert set(t.stages) <= set(en.stages)
    told = set(en.stages) - set(t.stages)  # a lesson may tell its backward stages itself
    assert not told or told <= set(tracer.trace_lesson(lesson, backward=True).stages), told
    for st in en.stages.values():
        for names in st.lists().values():
            for name in names:
                t.node(name)  # every featured node exists
    for name in en.nodes:
        t.node(name)  # every node the narrative speaks of exists


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_shown_node_is_captioned_by_the_narrative(lesson: str, lang: str) -> None:
    story = narrative.load(lesson, lang)
    for st in story.stages.values():
        for name in [*(st.show or ()), *st.heatmap, *st.bars]:
            assert story.node(name).caption, f"{lesson}.{lang}: {name} has no caption"
        for name in [*st.heatmap, *st.bars]:
            assert story.node(name).figure, f"{lesson}.{lang}: {name} has no figure caption"


@pytest.mark.parametrize("lesson", LESSONS)
def test_html_cells_show_their_steps_values(lesson: str) -> None:
    t = portable.shown(lesson_trace(lesson))  # library results print as their loop forms
    page = lesson_report(lesson, "en")["index.html"].decode()
    cells = re.findall(r'<td data-id="([^"]+)"[^>]*>([^<]*)</td>', page)
    assert len(cells) > 100
    for sid, text in cells:
        step = t[htmllib.unescape(sid)]
        if step.op == "maxabsdiff":
            assert htmllib.unescape(text) == portable.check_text(step.node)
        else:
            assert text == written.shown(step), sid


@pytest.mark.parametrize("lesson", LESSONS)
def test_markdown_tables_show_the_trace(lesson: str) -> None:
    t = lesson_trace(lesson)
    md = lesson_report(lesson, "en")["index.md"].decode()
    focus = [ln for ln in md.splitlines() if ln.startswith("| **2** | **journey** |")]
    assert focus
    name = {"trainable": "z", "causal": "causal.alpha", "multihead": "wrap.causal.alpha"}[lesson]
    node = t.node(name)
    row = node.value[(0,) * (node.value.ndim - 2) + (1,)]
    want = [written.fixed(v, 4) for v in row]
    assert any(re.findall(r"\*\*(-?\d+\.\d+)\*\*", ln) == want for ln in focus)


# Printed in the book: the trainable lesson's context vector of "journey", and its row of causal weights.
BOOK_ROWS = {
    "trainable": ["0.3061", "0.8210"],
    "causal": ["0.5517", "0.4483", "0.0000", "0.0000", "0.0000", "0.0000"],
}


@pytest.mark.parametrize("lesson", BOOK_ROWS)
def test_markdown_focus_rows_show_the_books_numbers(lesson: str) -> None:
    md = lesson_report(lesson, "en")["index.md"].decode()
    focus = [ln for ln in md.splitlines() if ln.startswith("| **2** | **journey** |")]
    assert any(re.findall(r"\*\*(-?\d+\.\d+)\*\*", ln) == BOOK_ROWS[lesson] for ln in focus)


def test_worked_dot_product_matches_the_trace() -> None:
    t = lesson_trace("trainable")
    page = lesson_report("trainable", "en")["index.html"].decode()
    block = re.search(r'class="equation[^>]*data-id="omega\[2,1\]">.*?<div class="extra">', page, re.S)
    assert block is not None
    numbers = [n for n in re.findall(r"<mn[^>]*>([^<]+)</mn>", block.group(0)) if "." in n]  # doors carry their ids
    want = []
    for c in (1, 2):
        want += [written.fixed(t[f"q[2,{c}]"].value, 4), written.fixed(t[f"k[1,{c}]"].value, 4)]
    want += [written.fixed(t[f"omega[2,1].p[{c}]"].value, 4) for c in (1, 2)] + [
        written.fixed(t["omega[2,1]"].value, 4)
    ]
    assert numbers == want


def test_multihead_report_splits_and_joins_heads() -> None:
    page = lesson_report("multihead", "en")["index.html"].decode()
    for head in ("1 · head 1", "2 · head 1", "3 · head 2", "4 · head 2"):
        assert f'<th scope="col">{head}</th>' in page  # wrap.concat: heads side by side
    assert "head 2" in page and 'id="split-split-hq-h2"' in page


def test_tokens_are_escaped() -> None:
    t = tracer.trace_lesson("trainable", inputs=[[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]], tokens=["<b>x</b>", "a|b"], query=1)
    files = report.build(t, "en")
    assert "<b>x</b>" not in files["index.html"].decode() and "&lt;b&gt;x&lt;/b&gt;" in files["index.html"].decode()
    assert r"a\|b" in files["index.md"].decode()
    assert report.slug(t).startswith("trainable-inputs-")


@pytest.mark.parametrize("lesson", LESSONS)
def test_report_cli_writes_every_lesson(lesson: str, tmp_path: Path) -> None:
    from tracer.cli import app

    res = CliRunner().invoke(app, ["report", "--lesson", lesson, "--lang", "zh", "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "index.html").read_bytes() == lesson_report(lesson, "zh")["index.html"]


@pytest.mark.parametrize("lesson", ("trainable", "multihead"))
def test_worked_context_vectors_list_their_terms(lesson: str) -> None:
    """A context vector's sum written out: its next-to-last line the weighted terms, its last the total
    (masked ones 0.0000)."""
    t = lesson_trace(lesson)
    page = lesson_report(lesson, "en")["index.html"].decode()
    blocks = re.split(r'(?=class="equation[^>]*data-id=")', page)[1:]
    checked = 0
    for block in blocks:
        sid = htmllib.unescape(re.match(r'class="equation[^>]*data-id="([^"]+)"', block).group(1))  # type: ignore[union-attr]
        step = t[sid]
        if not step.inputs or not all(".t[" in name for name in step.inputs):
            continue
        lines = block.split('class="extra"', 1)[0].split('class="rhs"')[1:]  # one per "=" of the equation
        numbers = [
            re.findall(r"-?\d+\.\d+", htmllib.unescape(re.sub(r"<[^>]+>", "", line)).replace("−", "-"))
            for line in lines[-2:]
        ]
        assert numbers == [[written.fixed(t[name].value) for name in step.inputs], [written.fixed(step.value)]], sid
        checked += 1
    assert checked >= 2
