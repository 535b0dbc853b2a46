"""The book's loop forms, captured, are reported as attention: scores filled by ``torch.dot``, summed contexts.

``tests/capture_corpus_loops.py`` writes the chapter's loops in its own
words: one query's scores filled one dot product at a time, every pair in a
double loop, ``torch.softmax``, and the context summed with ``+=``.  The
axes of a tensor filled entry by entry are named from what was written
(``tracer/record/capture/written.py``), the context from the loop that
summed it (``tracer/present/accumulate.py``), so the report finds the
attention and draws it as the lesson's page does.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import tracer
from tests import capture_corpus_loops as loops
from tracer.present import report

WORDS = loops.words


def _figures(t: tracer.Trace, lang: str = "en") -> dict[str, str]:
    files = report.build(t, lang)
    assert "Not following from their inputs" not in files["index.md"].decode()
    return {k: v.decode() for k, v in files.items() if k.startswith("fig-") and k.endswith(".svg")}


def _saved_and_verified(t: tracer.Trace, tmp_path) -> tracer.Trace:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.json"
    t.save(path)
    back = tracer.load(path)
    result = back.verify()
    assert result.ok, result.summary()
    return back


def test_one_query_loop_names_its_keys_and_matches_the_lesson(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = tracer.trace_torch(loops.one_query, tokens=WORDS)
    lesson = tracer.trace_lesson("simple")
    assert t.node("scores").axes == ("j",) and t.node("weights").axes == ("j",)
    assert np.array_equal(t.tensor("scores"), lesson.tensor("omega")[1])
    np.testing.assert_allclose(t.tensor("weights"), lesson.tensor("alpha")[1], rtol=1e-6)
    np.testing.assert_allclose(t.tensor(t.meta["output"]), lesson.tensor("z")[1], rtol=2e-6, atol=2e-7)
    _saved_and_verified(t, tmp_path)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_query_report_draws_weights_as_bars_and_the_context_vector(lang: str) -> None:
    t = tracer.trace_torch(loops.one_query, tokens=WORDS)
    figs = _figures(t, lang)
    assert sorted(figs) == ["fig-context-7.svg", "fig-weights.svg"]
    weights = figs["fig-weights.svg"]
    assert weights.count("<rect") - 1 >= 6  # a legend swatch and a bar per key
    for word in WORDS:
        assert f">{word}<" in weights
    context = figs["fig-context-7.svg"]
    assert ">z⁽²⁾<" in context  # the total of query 2, "journey": the row the loop's fixed query is
    for word in WORDS:
        assert f">{word}<" in context  # the legend: each token's contribution


def test_the_context_figure_stacks_the_terms_the_loop_added() -> None:
    t = tracer.trace_torch(loops.every_pair, tokens=WORDS)
    from tracer.present.accumulate import accumulation

    acc = accumulation(t, t.node("weights"))
    assert acc is not None and acc.total.name == t.meta["output"]
    assert len(acc.terms) == 36
    row = [term for at, term in acc.terms if at[0] == 1]
    np.testing.assert_allclose(sum(np.asarray(n.value, dtype=np.float64) for n in row), t.tensor("contexts_37")[1])


def test_every_pair_is_a_heatmap_with_the_tokens(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = tracer.trace_torch(loops.every_pair, tokens=WORDS)
    lesson = tracer.trace_lesson("simple")
    assert t.node("scores").axes == ("i", "j") and t.node("weights").axes == ("i", "j")
    assert np.array_equal(t.tensor("scores"), lesson.tensor("omega"))
    _saved_and_verified(t, tmp_path)
    figs = _figures(t)
    assert sorted(figs) == ["fig-contexts-37.svg", "fig-scores.svg", "fig-weights.svg"]
    for name in ("fig-scores.svg", "fig-weights.svg"):
        labels = re.findall(r'text-anchor="end"[^>]*>([^<]+)<', figs[name])
        assert sorted(labels) == sorted(WORDS * 2), labels  # queries and keys, labelled by token


def test_the_capture_block_form_reports_the_same_attention() -> None:
    with tracer.capture(tokens=WORDS) as cap:
        loops.every_pair()
    assert cap.trace.node("weights").axes == ("i", "j")
    assert "fig-weights.svg" in _figures(cap.trace)


def test_writes_of_values_that_pick_no_token_keep_their_axes() -> None:
    def totals(x: torch.Tensor) -> torch.Tensor:  # each entry a sum, not a dot of two tokens: no queries, no keys
        out = torch.empty(3, 2)
        for a in range(3):
            for b in range(2):
                out[a, b] = x[a, b] + x[b, a]
        return out

    t = tracer.trace_torch(totals, torch.arange(9, dtype=torch.float32).reshape(3, 3))
    assert t.node("out").axes == ("i", "k")


def test_a_query_fixed_by_a_number_is_not_guessed() -> None:
    def against(x: torch.Tensor) -> torch.Tensor:  # the "query" is no row of x: the figure is left out
        q = torch.tensor([0.3, 0.1, 0.2])
        s = torch.empty(4)
        for n, row in enumerate(x):
            s[n] = torch.dot(row, q)
        w = torch.softmax(s, dim=0)
        c = torch.zeros(3)
        for n, row in enumerate(x):
            c += w[n] * row
        return c

    t = tracer.trace_torch(against, torch.rand(4, 3, generator=torch.Generator().manual_seed(1)))
    assert t.node("s").axes == ("j",)
    assert sorted(_figures(t)) == ["fig-w.svg"]
