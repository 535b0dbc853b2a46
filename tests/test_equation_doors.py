"""The numbers put into a worked equation are doors too: each opens the step it shows, by mouse or keyboard.

A worked equation writes its inputs' values (``0.9091 × 0.3147 + …``), its
terms and its result; the page marks each of them with its step
(``data-id`` on the MathML number, :func:`tracer.present.render.env.doors`)
and the page's script makes each a control in the Tab order.  Only numbers
whose step is known are marked, and never one with a wrong step.
"""

from __future__ import annotations

import re

import pytest

import tracer
from tests.chromium import EXE, Browser
from tests.test_report_keyboard import key
from tracer.present.render.env import chunk, doors
from tracer.present.report import build

PANEL = "document.querySelector('dialog.door-panel')"


def test_each_number_of_a_chunk_is_marked_with_its_step_in_order() -> None:
    out = str(chunk(r"+ ({-0.4471}) \times 0.3147", ("q[2,2]", "k[1,2]")))
    assert re.findall(r'<mn class="door" data-id="([^"]+)">([^<]+)</mn>', out) == [
        ("q[2,2]", "0.4471"),
        ("k[1,2]", "0.3147"),
    ]
    masked = str(chunk(r"= ({-\infty})", ("flash.neg[5,3,2]",)))
    assert 'class="door" data-id="flash.neg[5,3,2]">∞</mi>' in masked  # a masked score opens its step too


def test_a_chunk_whose_numbers_do_not_match_its_ids_marks_none() -> None:
    text = str(chunk("= 1.5e-05", ("x[1,1]",)))  # written as two numbers: which is the step's is not guessed
    assert "data-id" not in text
    assert doors("<mn>1</mn>", ()) == "<mn>1</mn>"


def test_an_id_from_a_file_cannot_break_out_of_its_attribute() -> None:
    out = doors("<mn>1</mn>", ('a"><script>',))
    assert "<script>" not in out and ("&#34;" in out or "&quot;" in out)


def test_every_number_put_into_the_focus_query_s_dot_product_is_marked() -> None:
    html = build(tracer.trace_lesson("causal"), "en", ("html",))["index.html"].decode("utf-8")
    eq = html[html.index('id="omega-2-1" data-id="omega[2,1]"') :]
    eq = eq[: eq.index('<div class="equation', 10)]  # up to the next equation
    marked = re.findall(r'data-id="([^"]+)">([^<]+)</m', eq)
    assert [i for i, _ in marked] == [
        "q[2,1]", "k[1,1]", "q[2,2]", "k[1,2]", "omega[2,1].p[1]", "omega[2,1].p[2]", "omega[2,1]",
    ]  # fmt: skip


@pytest.mark.browser
@pytest.mark.skipif(EXE is None, reason="chromium is not installed")
def test_a_number_in_an_equation_opens_its_step_by_key_and_by_click(browser: Browser, tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    for name, data in build(tracer.trace_lesson("causal"), "en", ("html",)).items():
        (folder / name).write_bytes(data)
    browser.open((folder / "index.html").as_uri())
    first = ".equation math [data-id]"
    assert browser.js(f"[...document.querySelectorAll({first!r})].every(m => m.tabIndex === 0 && "
                      "m.getAttribute('role') === 'button')")  # fmt: skip
    wanted = browser.js(f"document.querySelector({first!r}).dataset.id")
    browser.js(f"document.querySelector({first!r}).focus()")
    assert browser.js(f"document.activeElement === document.querySelector({first!r})")  # Tab can reach it
    key(browser, "Enter", "Enter", 13, "\r")
    assert browser.js(f"{PANEL}.open") and browser.js(f"{PANEL}.querySelector('.door-title').textContent") == wanted
    key(browser, "Escape", "Escape", 27)
    assert not browser.js(f"{PANEL}.open")
    assert browser.js(f"document.activeElement === document.querySelector({first!r})")  # the focus came back
    box = browser.js(
        "(() => { const r = document.querySelectorAll('.equation math [data-id]')[1].getBoundingClientRect();"
        " scrollTo(0, scrollY + r.top - 200); const s = document.querySelectorAll('.equation math [data-id]')[1]"
        ".getBoundingClientRect(); return [s.x + s.width / 2, s.y + s.height / 2]; })()"
    )
    second = browser.js("document.querySelectorAll('.equation math [data-id]')[1].dataset.id")
    browser.click(*box)
    assert browser.js(f"{PANEL}.querySelector('.door-title').textContent") == second


NUMBER = re.compile(r"-?\d+\.\d+")
"""A number as a worked equation's LaTeX writes it (inputs as given, the rest to the page's decimals)."""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_number_of_the_tutorial_s_walk_through_opens_the_step_whose_value_it_shows(lang: str) -> None:
    """The tutorial's dot products, context components and every pair's dot product: each number is marked.

    Each number the walk-through puts into an equation is paired, in order,
    with a step of the trace whose value it is (to the digits shown).
    """
    from tracer.lessons.simple import page as walkthrough
    from tracer.present import overflow
    from tracer.present.views.model import Equation, Group

    t = tracer.trace_lesson("simple")
    page = walkthrough.build(t, lang, 4, overflow.scaled(t))
    blocks = [b for s in page.sections for b in s.blocks]
    eqs = [e for b in blocks for e in (b.blocks if isinstance(b, Group) else (b,)) if isinstance(e, Equation)]
    assert len(eqs) == 6 + 3 + 36  # the focus query's scores, its context vector's components, every pair
    for e in eqs:
        assert len(e.doors) == len(e.rhs), e.anchor
        numbers = 0
        for part, ids in zip(e.rhs, e.doors, strict=True):
            for written, marked in zip(part, ids, strict=True):
                shown = NUMBER.findall(written)
                assert len(shown) == len(marked), (e.anchor, written, marked)
                for text, sid in zip(shown, marked, strict=True):
                    digits = len(text.partition(".")[2])
                    assert abs(float(text) - float(t[sid].value)) <= 0.5 * 10**-digits + 1e-7, (e.anchor, sid)
                numbers += len(shown)
        assert numbers >= 3 * 2 + 3 + 1, e.anchor  # three factor pairs or more, their terms, the result


@pytest.mark.browser
@pytest.mark.skipif(EXE is None, reason="chromium is not installed")
def test_the_committed_tutorial_page_opens_a_factor_of_its_dot_product_and_a_term_of_its_context_vector(
    browser: Browser,
) -> None:
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / "reports" / "tutorial" / "en" / "index.html"
    browser.open(page.as_uri())
    for selector, wanted in (
        ("#omega-2-1 .rhs math [data-id]", "x[2,1]"),
        ("#z-2-1 .rhs math [data-id]", "alpha[2,1]"),
        ("#pair-3-4 .rhs math [data-id]", "x[3,1]"),
    ):
        browser.js(f"(document.querySelector({selector!r}).closest('details') || {{}}).open = true")  # a fold
        browser.js(f"document.querySelector({selector!r}).focus()")
        key(browser, "Enter", "Enter", 13, "\r")
        assert browser.js(f"{PANEL}.querySelector('.door-title').textContent") == wanted, selector
        key(browser, "Escape", "Escape", 27)
        assert browser.js(f"document.activeElement === document.querySelector({selector!r})")
