"""Jupyter display: a trace and a step as text, scoped HTML with MathML, and Markdown with $...$ math."""

from __future__ import annotations

import re

import pytest

import tracer
from tests import tinymodels as tm
from tracer.present.display import ROOT, summary
from tracer.record import registry

HOSTILE = ["<script>alert(1)</script>", "a|b", "$x$", "&amp;", "`tick`"]
KEYS = {"text/plain", "text/html", "text/markdown"}


@pytest.fixture(scope="module")
def tutorial() -> tracer.Trace:
    return tracer.trace_self_attention()


def selectors(html: str) -> list[str]:
    """Every CSS selector of the <style> blocks in ``html``."""
    css = "".join(re.findall(r"<style>(.*?)</style>", html, re.S))
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return [sel.strip() for block in re.findall(r"([^{}]+)\{[^{}]*\}", css) for sel in block.split(",")]


def test_trace_bundle_keys_and_plain_text(tutorial: tracer.Trace) -> None:
    bundle = tutorial._repr_mimebundle_()
    assert set(bundle) == KEYS
    assert bundle["text/plain"] == repr(tutorial)
    assert tutorial._repr_mimebundle_(include=["text/html"]).keys() == {"text/html"}
    assert "text/html" not in tutorial._repr_mimebundle_(exclude=["text/html"])


def test_trace_shows_the_focus_query_results(tutorial: tracer.Trace) -> None:
    bundle = tutorial._repr_mimebundle_()
    for text in (bundle["text/html"], bundle["text/markdown"]):
        assert "0.1385" in text and "0.2379" in text  # alpha[2,*], as the tutorial prints it
        assert "0.4419" in text and "0.6515" in text and "0.5683" in text  # z(2)
        for stage in tutorial.stages:
            assert stage in text
    assert "<math" in bundle["text/html"]
    assert r"$\alpha_{2j} = \frac{" in bundle["text/markdown"]


def test_the_focus_token_is_marked_by_the_view_model(tutorial: tracer.Trace) -> None:
    """Which token is the focus query's is decided in Python; the templates only show it."""
    marked = summary(tutorial).tokens
    assert [tok for tok, focus in marked if focus] == ["journey"] and len(marked) == 6
    bundle = tutorial._repr_mimebundle_()
    assert bundle["text/html"].count('class="token focus"') == 1
    assert '<span class="token focus">journey</span>' in bundle["text/html"]
    assert "Your **journey** starts" in bundle["text/markdown"]


@pytest.mark.parametrize("lesson", registry.names())
def test_html_is_scoped_and_offline(lesson: str) -> None:
    t = tm.lesson_trace(lesson)
    for html in (t._repr_mimebundle_()["text/html"], t[t.nodes[-1].name]._repr_mimebundle_()["text/html"]):
        assert html.startswith(f'<div class="{ROOT}">')
        sels = selectors(html)
        assert sels and all(s.startswith(f".{ROOT}") for s in sels), sels
        assert not re.search(r"<script|<link|@import|url\(|\bsrc=|\bhref=", html, re.I)


def test_hostile_tokens_are_escaped() -> None:
    t = tracer.trace_self_attention([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5], [0.2, 0.1]], HOSTILE, query=1)
    bundle = t._repr_mimebundle_()
    html, md = bundle["text/html"], bundle["text/markdown"]
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&amp;amp;" in html
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert r"a\|b" in md and r"\$x\$" in md and r"\`tick\`" in md
    step = t["x[1,1]"]._repr_mimebundle_()
    assert "<script>" not in step["text/html"]


def test_step_bundle(tutorial: tracer.Trace) -> None:
    step = tutorial["omega[2,1]"]
    bundle = step._repr_mimebundle_()
    assert set(bundle) == KEYS and bundle["text/plain"] == repr(step)
    eq = "omega[2,1] = x(2)·x(1) = 0.55×0.43 + 0.87×0.15 + 0.66×0.89 = 0.2365 + 0.1305 + 0.5874 = 0.9544"
    assert eq in bundle["text/markdown"] and eq in bundle["text/html"]
    assert r"$\omega_{21} = x^{(2)} \cdot x^{(1)}" in bundle["text/markdown"]
    assert "<math" in bundle["text/html"]
    for text in bundle["text/html"], bundle["text/markdown"]:
        assert "omega[2,1].p[3]" in text and "scores" in text and "sum" in text


def test_step_with_many_inputs_says_how_many_more() -> None:
    t = tracer.trace_self_attention([[float(i % 3), 1.0] for i in range(20)])
    md = t["stable.max[2]"]._repr_mimebundle_()["text/markdown"]
    assert "… and 8 more" in md


def test_slice_step_lists_its_values(tutorial: tracer.Trace) -> None:
    md = tutorial["alpha[2]"]._repr_mimebundle_()["text/markdown"]
    assert "0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581" in md
