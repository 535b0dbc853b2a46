"""Where the step navigator stops, read from the committed lesson pages (both languages).

The rule (``tracer/present/views/stops.py``, ``docs/reports.md``): a stop is a
worked result (an equation written out, a table worked down to a Σ row, a
figure), never a block inside a ``<details>``, never an equation that an
earlier stop already shows, and every section has at least one.  Also here:
the rounding note is said once a page, per-head equations name their head,
and an absolute value's bars are MathML fences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tracer.present.strings import Strings

ROOT = Path(__file__).resolve().parent.parent
PAGES = [(lesson, lang) for lesson in ("tutorial", "trainable", "causal", "multihead") for lang in ("en", "zh")]


@dataclass
class Block:
    """One anchored block of the page: its classes, section, the ``<details>`` around it, its maths' text."""

    id: str
    classes: set[str]
    section: str
    in_details: bool
    total_row: bool = False
    lhs: str = ""


@dataclass
class _Page(HTMLParser):
    blocks: list[Block] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.details = 0
        self.lhs_depth = 0  # >0 while inside a <span class="lhs">: its text is collected
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        if tag == "section":
            self.sections.append(a.get("id") or "")
        if tag == "details":
            self.details += 1
        if "step" in classes:
            self.blocks.append(Block(a.get("id") or "", classes, self.sections[-1], self.details > 0))
        if tag == "tr" and "total" in classes and self.blocks:
            self.blocks[-1].total_row = True
        if tag == "span" and "lhs" in classes:
            self.lhs_depth = 1
        elif self.lhs_depth and tag not in ("br", "mspace"):
            self.lhs_depth += 1
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self.details -= 1
        if self.lhs_depth and tag not in ("br", "mspace"):
            self.lhs_depth -= 1

    def handle_data(self, data: str) -> None:
        if self.lhs_depth and self.blocks:
            self.blocks[-1].lhs += data.strip()


def page(lesson: str, lang: str) -> _Page:
    p = _Page()
    p.feed((ROOT / "reports" / lesson / lang / "index.html").read_text(encoding="utf-8"))
    return p


@pytest.mark.parametrize(("lesson", "lang"), PAGES)
def test_stops_follow_the_rule(lesson: str, lang: str) -> None:
    p = page(lesson, lang)
    stops = [b for b in p.blocks if "stop" in b.classes]
    assert not [b.id for b in stops if b.in_details], "a stop inside a <details> would be hidden"
    assert {b.section for b in stops} == set(p.sections), "every section can be reached"
    lhs = [b.lhs for b in stops if "equation" in b.classes]
    assert all(lhs) and len(lhs) == len(set(lhs)), f"two equation stops show the same quantity: {lhs}"
    for s in p.sections:
        mine = [b for b in stops if b.section == s]
        worked = [b for b in mine if "equation" in b.classes or "fig" in b.classes or b.total_row]
        if worked:  # reference tables and general formulas are stops only where nothing else is
            assert worked == mine, (s, [b.id for b in mine if b not in worked])
        else:
            assert len(mine) == 1, (s, [b.id for b in mine])
    every_equation = [b.id for b in p.blocks if "equation" in b.classes and not b.in_details]
    assert set(every_equation) <= {b.id for b in stops}, "a worked equation a reader steps through is skipped"


@pytest.mark.parametrize(("lesson", "lang"), PAGES)
def test_equations_on_a_page_are_distinct_quantities(lesson: str, lang: str) -> None:
    """No two written-out equations outside the folded expansions share a left-hand side (heads included)."""
    lhs = [b.lhs for b in page(lesson, lang).blocks if "equation" in b.classes and not b.in_details]
    assert len(lhs) == len(set(lhs)), sorted(x for x in lhs if lhs.count(x) > 1)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_head_is_named_in_its_equations(lang: str) -> None:
    blocks = {b.id: b.lhs for b in page("multihead", lang).blocks}
    for c in (1, 2):
        one, two = blocks[f"wrap-z-1-1-2-{c}"], blocks[f"wrap-z-2-1-2-{c}"]
        assert one != two
        assert one.startswith("z") and f"1,{c}" in one and f"2,{c}" in two, (one, two)


@pytest.mark.parametrize(("lesson", "lang"), PAGES)
def test_rounding_note_is_said_once(lesson: str, lang: str) -> None:
    html = (ROOT / "reports" / lesson / lang / "index.html").read_text(encoding="utf-8")
    note = Strings(lang)("lesson.rounding", n=4)
    assert html.count(note) <= 1
    if lesson == "causal":  # its dot products' rounded terms do not add up: said at the first one
        assert html.count(note) == 1
        first = html.index('class="equation')
        assert html.index(note) < html.index('class="equation', first + 1), "not under the first equation"


@pytest.mark.parametrize(("lesson", "lang"), PAGES)
def test_absolute_value_bars_are_fences(lesson: str, lang: str) -> None:
    """A bare ``<mo>|</mo>`` is spaced like a relation; every bar on the page is a prefix or postfix fence."""
    html = (ROOT / "reports" / lesson / lang / "index.html").read_text(encoding="utf-8")
    bars = re.findall(r"<mo([^>]*)>(?:\||&#x0007C;|‖|&#x02016;)</mo>", html)
    assert all('form="prefix"' in a or 'form="postfix"' in a for a in bars), bars
    if lesson == "tutorial":
        assert len(bars) >= 6  # |x| |y| and |x^(2)|
