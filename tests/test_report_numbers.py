"""The numbers a report shows are the trace's: parsed back out of the HTML and the Markdown."""

from __future__ import annotations

import html as htmllib
import re

import numpy as np

import tracer
from tests import written

DEC = 4
NUMBER = re.compile(r"-?\d+\.\d+|-?\d+")


def test_every_html_cell_shows_its_steps_value(tutorial: tracer.Trace, tutorial_report) -> None:  # type: ignore[no-untyped-def]
    page = tutorial_report("en")["index.html"].decode()
    cells = re.findall(r'<td data-id="([^"]+)"[^>]*>([^<]*)</td>', page)
    assert len(cells) > 100
    ids = set()
    for sid, text in cells:
        if sid.startswith("scaled."):  # the overflow stage: test_scaled_cells_are_the_overflow_stage
            continue
        step = tutorial[htmllib.unescape(sid)]
        assert text == written.shown(step, DEC), sid
        assert abs(float(text) - step.value) <= 0.5 * 10**-DEC + 1e-12
        ids.add(sid)
    for must in ("omega[2,1]", "alpha[2,6]", "z[2,3]", "torch.alpha_sum[2]", "naive.sum[2]", "x[6,2]"):
        assert must in ids


def test_scaled_cells_are_the_overflow_stage(tutorial: tracer.Trace, tutorial_report) -> None:  # type: ignore[no-untyped-def]
    from tracer.present import overflow

    ov = overflow.scaled(tutorial)
    assert ov is not None and ov.factor == 10  # 1.4950 * 10**2 is the first power past 88.72
    page = tutorial_report("en")["index.html"].decode()
    cells = re.findall(r'<td data-id="(scaled\.[^"]+)"[^>]*>([^<]*)</td>', page)
    assert cells
    for sid, text in cells:
        assert tutorial[sid].stage == "overflow"
        value = tutorial[sid].value
        assert text == written.cell(value, DEC)
        if np.isfinite(value):  # rounded to 4 decimals, or to 5 significant digits once huge
            assert abs(float(text) - value) <= max(0.5 * 10**-DEC, 1e-4 * abs(value))
        else:
            assert text == str(value)
    assert any(text == "inf" for _, text in cells) and any(text == "nan" for _, text in cells)


def aligned(md: str, first: str) -> list[str]:
    """The rows of the Markdown ``aligned`` block whose first row starts with ``first``."""
    lines = md.splitlines()
    start = next(n for n, ln in enumerate(lines) if ln.startswith(first))
    end = lines.index(r"\end{aligned}", start)
    return lines[start:end]


def _expected_dot(t: tracer.Trace, i: int, j: int) -> list[str]:
    d = t.tensor("x").shape[1]
    out = []
    for k in range(1, d + 1):
        out += [written.shown(t[f"x[{i},{k}]"]), written.shown(t[f"x[{j},{k}]"])]
    out += [written.fixed(t[f"omega[{i},{j}].p[{k}]"].value, DEC) for k in range(1, d + 1)]
    return [*out, written.fixed(t[f"omega[{i},{j}]"].value, DEC)]


def test_html_dot_products_match(tutorial: tracer.Trace, tutorial_report) -> None:  # type: ignore[no-untyped-def]
    page = tutorial_report("en")["index.html"].decode()
    for j in range(1, 7):
        block = re.search(rf'id="omega-2-{j}".*?<div class="extra">', page, re.S)  # the lines, not the sums
        # each number is a door (``<mn class="door" data-id=…>``): its text is what is compared
        assert block is not None
        numbers = [n for n in re.findall(r"<mn[^>]*>([^<]+)</mn>", block.group(0)) if "." in n]
        assert numbers == _expected_dot(tutorial, 2, j)


def test_markdown_dot_products_and_tables_match(tutorial: tracer.Trace, tutorial_report) -> None:  # type: ignore[no-untyped-def]
    md = tutorial_report("en")["index.md"].decode()
    for j in range(1, 7):
        lines = aligned(md, rf"\omega_{{2{j}}} &= x^{{(2)}} \cdot x^{{({j})}}")
        assert re.findall(r"-?\d+\.\d+", " ".join(lines[1:])) == _expected_dot(tutorial, 2, j)
    # the normalization table: one row per key, columns in a fixed order
    header = next(ln for ln in md.splitlines() if ln.startswith("| $j$ | Token | $\\omega_{2j}$"))
    lines = md.splitlines()
    start = lines.index(header) + 2
    nodes = ["omega", "div.alpha", "naive.exp", "naive.alpha", "stable.shift", "stable.exp", "alpha", "torch.alpha"]
    for j in range(1, 7):
        cells = [c.strip().strip("*") for c in lines[start + j - 1].strip("|").split("|")]
        assert cells[0] == str(j) and cells[1] == tutorial.tokens[j - 1]
        assert cells[2:] == [written.fixed(tutorial[f"{n}[2,{j}]"].value, DEC) for n in nodes]


def test_the_tutorials_printed_numbers_appear(tutorial_report) -> None:  # type: ignore[no-untyped-def]
    md = tutorial_report("en")["index.md"].decode()
    # printed by the tutorial: scores, sum-normalized and softmax weights of query 2, and z(2)
    for row in (
        "0.9544 1.4950 1.4754 0.8434 0.7070 1.0865",
        "0.1455 0.2278 0.2249 0.1285 0.1077 0.1656",
        "0.1385 0.2379 0.2333 0.1240 0.1082 0.1581",
    ):
        for value in row.split():
            assert value in md
    z = re.search(r"\| \*\*\$z\^\{\(2\)\}\$\*\* \|.*", md)
    assert z is not None and re.findall(r"\d\.\d{4}", z.group(0)) == ["0.4419", "0.6515", "0.5683"]


def test_rounding_is_flagged_exactly_where_it_shows(tutorial: tracer.Trace) -> None:
    from tracer.lessons.simple import page as walkthrough
    from tracer.present.views.model import Equation

    page = walkthrough.build(tutorial, "en", decimals=1)
    eqs = [b for s in page.sections for b in s.blocks if isinstance(b, Equation) and b.step.startswith("omega[")]
    assert eqs
    for eq in eqs:
        i, j = map(int, re.findall(r"\d+", eq.step))
        terms = [tutorial[f"omega[{i},{j}].p[{k}]"].value for k in (1, 2, 3)]
        shown_sum = sum(float(written.fixed(v, 1)) for v in terms)
        differs = written.fixed(shown_sum, 1) != written.fixed(tutorial[eq.step].value, 1)
        assert bool(eq.note) == differs, eq.step
    assert any(eq.note for eq in eqs)


def test_decimals_option_changes_every_number(tutorial: tracer.Trace) -> None:
    from tracer.present import report

    md = report.build(tutorial, "en", ("md",), decimals=6)["index.md"].decode()
    assert written.fixed(tutorial["alpha[2,1]"].value, 6) in md
    assert np.isclose(float(written.fixed(tutorial["alpha[2,1]"].value, 6)), tutorial["alpha[2,1]"].value, atol=1e-6)


def test_context_terms_match(tutorial: tracer.Trace, tutorial_report) -> None:  # type: ignore[no-untyped-def]
    md = tutorial_report("en")["index.md"].decode()
    for k in (1, 2, 3):
        lines = aligned(md, rf"z^{{(2)}}_{{{k}}} &= \sum_{{j}}")
        terms, total = lines[-2], lines[-1]  # one row each: the result is on a line of its own
        want = [written.fixed(tutorial[f"z[2].t[{j},{k}]"].value, DEC) for j in range(1, 7)]
        assert re.findall(r"-?\d+\.\d+", terms) == want
        assert re.findall(r"-?\d+\.\d+", total) == [written.fixed(tutorial[f"z[2,{k}]"].value, DEC)]
