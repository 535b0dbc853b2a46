"""A report and ``verify`` give one verdict, from one computation.

A page prints each library result as its loop form (:func:`portable.shown`),
so a check ``|N - N.loop|`` no longer matches the values printed beside it;
recomputing that printed trace called a fresh LayerNorm/GELU block "edited".
The page now asks the recorded trace, the one ``verify`` reads.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from click.testing import CliRunner

import tracer
from tests import capture_corpus_real as real
from tracer.cli import app
from tracer.core import portable
from tracer.core.trace import Trace
from tracer.present import report

BANNER = "Not following from their inputs"


def test_a_layer_norm_block_reports_clean_and_verifies_clean(tmp_path: Path) -> None:
    t = tracer.trace_torch(real.layer_norm_block)
    shown = portable.shown(t)
    assert shown is not t and any(
        not np.array_equal(a.value, b.value) for a, b in zip(t.nodes, shown.nodes, strict=True)
    )  # the page really prints other values than the recorded ones
    assert not Trace(shown.nodes, t.meta).verify().ok  # verified on its own, the printed form looks edited
    assert shown.verify() is t.verify() and t.verify().ok  # so it answers with the recorded trace's verdict
    for lang in ("en", "zh"):
        files = report.build(t, lang)
        assert BANNER not in files["index.md"].decode() and "与其输入不相符" not in files["index.html"].decode()
    path = tmp_path / "block.json"
    spec = "tests/capture_corpus_real.py:layer_norm_block"
    assert CliRunner().invoke(app, ["trace", "--torch", spec, "-o", str(path)]).exit_code == 0
    assert CliRunner().invoke(app, ["verify", str(path)]).exit_code == 0
    out = tmp_path / "rep"
    assert CliRunner().invoke(app, ["report", "--from", str(path), "-o", str(out), "--format", "md"]).exit_code == 0
    assert BANNER not in (out / "index.md").read_text(encoding="utf-8")


def test_an_edited_value_is_named_by_both_with_the_same_words() -> None:
    t = tracer.trace_torch(real.layer_norm_block)
    node = t.node("ln_1")
    value = np.array(node.value)
    value[0, 1, 2] += 0.5
    edited = Trace([dataclasses.replace(n, value=value) if n is node else n for n in t.nodes], t.meta)
    verdict = edited.verify()
    assert not verdict.ok and "ln_1" in verdict.summary()
    page = report.build(edited, "en", formats=("md",))["index.md"].decode()
    head = verdict.summary().split(":")[0]  # "49 values do not follow from their inputs"
    assert page.count(BANNER) == 1 and head in page and "check.ln\\_1" in page
