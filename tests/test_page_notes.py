"""Footnotes: what a page says about the tool sits in numbered notes, linked both ways, never in the text.

The text of every page speaks of attention; sentences about library kernels,
machines, thread counts or the test suite are footnotes (issue: pages a
teacher hands out, item 10).  These tests read every shipped page, in both
languages, as a view model, as HTML and as Markdown.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

import tracer
from tracer.errors import InputError
from tracer.lessons.simple import page as walkthrough
from tracer.present import narrative, overflow
from tracer.present.narrative import Stage
from tracer.present.render.html import render_html as html
from tracer.present.render.markdown import render_markdown as markdown
from tracer.present.strings import LANGS
from tracer.present.views import lesson
from tracer.present.views.model import Figure, Page, Para, Section, Table
from tracer.present.views.notes import number

LESSONS = ("simple", "trainable", "causal", "multihead", "window", "gqa", "flash", "rope", "kvcache")
TOOL = {
    "en": ("machine", "CPU", "thread", "test suite", "BLAS", "kernel", "the check names"),
    "zh": ("机器", "处理器", "线程", "测试", "内核", "检查会指出"),
}
"""Words that speak of the tool rather than of attention: allowed in footnotes only."""


@cache
def page(name: str, lang: str) -> Page:
    t = tracer.trace_lesson(name)
    if name == "simple":
        return walkthrough.build(t, lang, 4, overflow.scaled(t))
    return lesson.build(t, narrative.load(name, lang))


def body(p: Page) -> list[str]:
    """Every text of the page a reader reads as the lesson: paragraphs, captions, table notes (not footnotes)."""
    out: list[str] = []
    for s in p.sections:
        for b in s.blocks:
            if isinstance(b, Para):
                out.append(b.text)
            elif isinstance(b, Table | Figure):
                out.append(b.caption.text if isinstance(b.caption, Para) else b.caption)
                out += [n.text for n in getattr(b, "notes", ())]
    return out


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", LESSONS)
def test_the_text_speaks_of_attention_and_the_tool_talk_is_footnoted(name: str, lang: str) -> None:
    p = page(name, lang)
    text = " ".join(body(p))
    for word in TOOL[lang]:
        if name == "flash" and word in ("kernel", "内核"):
            continue  # FlashAttention's kernel is the lesson's subject, not the tool
        assert word not in text, (name, lang, word)
    notes = [n for s in p.sections for n in s.notes]
    assert [n.n for n in notes] == list(range(1, len(notes) + 1))  # numbered once, in reading order
    for n in notes:
        assert text.count(f"[^{n.n}]") == 1  # cited exactly once, in the section that lists it


@pytest.mark.parametrize("name", LESSONS)
def test_footnotes_link_both_ways_in_html_and_are_markdown_footnotes(name: str) -> None:
    p = page(name, "en")
    notes = [n for s in p.sections for n in s.notes]
    if name not in ("multihead", "kvcache"):
        assert notes, name  # every page but multihead and kvcache has something to say about the tool
    doc = html(p)
    md = markdown(p)
    for n in notes:
        ref = re.search(rf'<a href="#note-{n.n}" id="note-ref-{n.n}" role="doc-noteref" aria-label="Note {n.n}">', doc)
        assert ref, n
        assert f'<li id="note-{n.n}" value="{n.n}">' in doc
        assert f'<a class="back" href="#note-ref-{n.n}" role="doc-backlink"' in doc
        assert md.count(f"[^{n.n}]") == 2 and f"\n[^{n.n}]: " in md  # the reference and the definition
    assert "[^" not in re.sub(r"\[\^\d+\]", "", md)  # no marker left unnumbered


def test_the_chinese_page_names_its_notes_in_chinese() -> None:
    doc = html(page("simple", "zh"))
    assert 'aria-label="注 1"' in doc and 'aria-label="注释"' in doc and "返回注 1 所在的正文" in doc


def _section(*paras: Para) -> Section:
    return Section("s", "S", paras)


def test_numbering_runs_over_the_page_and_lists_each_note_under_its_section() -> None:
    a = Para("one[^x] and two[^y]", math=True, notes=(("x", Para("X")), ("y", Para("Y"))))
    b = Para("three[^x]", math=True, notes=(("x", Para("Z")),))
    first, second = number((_section(a), _section(Para("plain", math=True), b)))
    assert first.blocks[0].text == "one[^1] and two[^2]"  # type: ignore[union-attr]
    assert [(n.n, n.text.text) for n in first.notes] == [(1, "X"), (2, "Y")]
    assert second.blocks[1].text == "three[^3]"  # type: ignore[union-attr]
    assert [(n.n, n.anchor, n.ref) for n in second.notes] == [(3, "note-3", "note-ref-3")]


def test_a_marker_without_a_note_or_a_note_without_a_marker_is_an_error() -> None:
    with pytest.raises(InputError, match=r"\[\^x\] has no text"):
        number((_section(Para("a[^x] b[^y]", math=True, notes=(("y", Para("Y")),))),))
    with pytest.raises(InputError, match="never marked"):
        number((_section(Para("a", math=True, notes=(("y", Para("Y")),))),))
    with pytest.raises(InputError, match="has no text"):
        number((_section(Para("a[^x]", math=True)),))
    assert number((_section(Para("a[^x]")),))[0].notes == ()  # a token's text is never read for markers


def test_a_narrative_cites_its_stage_notes_and_checks_them() -> None:
    blocks = lesson.prose("Text.[^a]\n\nMore.", "st", {"a": "A note."})
    assert blocks[0].notes == (("a", Para("A note.", math=True)),)  # type: ignore[union-attr]
    with pytest.raises(InputError, match="never cited"):
        lesson.prose("Text.", "st", {"a": "A note."})
    with pytest.raises(InputError, match="has no text"):
        lesson.prose("Text.[^b]", "st", {})


def test_a_notebook_cell_numbers_its_notes_with_superscripts() -> None:
    cell = narrative.footnoted(Stage("T", "One.[^a] Two.[^b]\n", notes={"a": "A.", "b": "B."}))
    assert cell == "One.<sup>1</sup> Two.<sup>2</sup>\n\n---\n\n<sup>1</sup> A.\n\n<sup>2</sup> B.\n"
    assert narrative.footnoted(Stage("T", "\nNo notes.\n")) == "\nNo notes.\n"  # unchanged, byte for byte


@pytest.mark.parametrize("lang", LANGS)
def test_notes_survive_other_options(lang: str) -> None:
    """A narrower window and more groups still cite and list their notes."""
    for name, opts in (("window", {"window": 2}), ("gqa", {"heads": 6, "groups": 3, "d_out": 12})):
        p = lesson.build(tracer.trace_lesson(name, **opts), narrative.load(name, lang))
        assert [n.n for s in p.sections for n in s.notes] == [1, 2]


@pytest.mark.parametrize("lang", LANGS)
def test_a_captured_page_footnotes_the_machine_dependence_of_its_sums(lang: str) -> None:
    """Captured code's matrix products: the text says they agree up to rounding, the note says why it varies."""
    import torch

    from tracer.present.report import narrative_of

    def attend(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x @ x.T, dim=-1) @ x

    t = tracer.trace_torch(attend, torch.arange(12, dtype=torch.float32).reshape(4, 3) / 10)
    p = lesson.build(t, narrative_of(t, lang))
    for word in TOOL[lang]:
        assert word not in " ".join(body(p)), word
    notes = [n.text.text for s in p.sections for n in s.notes]
    assert notes and all(("thread" if lang == "en" else "线程") in n for n in notes)
