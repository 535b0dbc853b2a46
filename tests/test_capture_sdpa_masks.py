"""SDPA's ``attn_mask`` recomputed under the rules torch used: a boolean mask keeps, a float mask is added.

A boolean mask given the wrong way round (``triu(diagonal=1).bool()``:
SDPA keeps the keys where it is True, so this keeps the future and hides
the past) hides every key from the last query.  Torch gives that query
weights 0; the capture records the same (``N.blind``, ``N.weights.safe``),
so the fresh capture verifies clean, the report raises no alarm, and the
page shows the mask and says which query saw nothing.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tracer
from tests import capture_corpus_loops as loops
from tracer.present import report

FORMS = {"hide_future": loops.sdpa_hide_future, "keep_past": loops.sdpa_keep_past, "added": loops.sdpa_added}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_fresh_masked_capture_verifies_clean_through_a_file(form: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = tracer.trace_torch(FORMS[form])
    assert t.meta["opaque"] == []
    assert np.array_equal(t.tensor(t.meta["output"]), FORMS[form]().numpy())
    t.save(tmp_path / "t.json")
    result = tracer.load(tmp_path / "t.json").verify()
    assert result.ok, result.summary()
    assert t.meta["output"] not in result.unchecked


def test_the_wrong_polarity_hides_the_past_and_blinds_the_last_query() -> None:
    t = tracer.trace_torch(loops.sdpa_hide_future)
    out = t.meta["output"]
    hidden = t.tensor(f"{out}.hide")  # 1 where SDPA hid the key: on and below the diagonal
    assert np.array_equal(hidden, np.tril(np.ones((6, 6), dtype=np.float32)))
    assert np.array_equal(t.tensor(f"{out}.blind")[..., 5], np.ones((1, 2), dtype=np.float32))
    assert not t.tensor(f"{out}.blind")[..., :5].any()
    weights = t.tensor(f"{out}.weights.safe")
    assert not weights[..., 5, :].any()  # the last query: weights 0, as torch gave it
    np.testing.assert_allclose(weights[..., :5, :].sum(-1), 1.0, rtol=1e-6)
    assert not t.tensor(out)[..., 5, :].any()
    assert np.isnan(t.tensor(f"{out}.weights.quot")[..., 5, :]).all()  # the formula's 0/0, kept beside it


def test_an_edited_weight_of_the_blind_query_is_still_named() -> None:
    t = tracer.trace_torch(loops.sdpa_hide_future)
    name = f"{t.meta['output']}.weights.safe"
    node = t.node(name)
    value = np.array(node.value, copy=True)
    value[0, 0, 5, 2] = 0.25
    edited = tracer.Trace([dataclasses.replace(n, value=value) if n.name == name else n for n in t.nodes], t.meta)
    result = edited.verify()
    assert not result.ok and result.wrong[0].node == name


@pytest.mark.parametrize("form", ["keep_past", "added"])
def test_a_mask_that_leaves_every_query_a_key_adds_no_step(form: str) -> None:
    t = tracer.trace_torch(FORMS[form])
    out = t.meta["output"]
    names = {n.name for n in t.nodes}
    assert f"{out}.blind" not in names and f"{out}.weights.safe" not in names
    np.testing.assert_allclose(t.tensor(f"{out}.weights.quot").sum(-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_shows_the_mask_and_the_query_that_saw_nothing(lang: str) -> None:
    t = tracer.trace_torch(loops.sdpa_hide_future)
    files = report.build(t, lang)
    page = files["index.md"].decode()
    assert "Not following from their inputs" not in page and "与其输入不相符的数值" not in page
    assert {"fig-sdpa-masked-by-h1.svg", "fig-sdpa-masked-by-h2.svg"} <= set(files)  # −inf where a key was hidden
    assert {"fig-sdpa-weights-safe-h1.svg", "fig-sdpa-weights-safe-h2.svg"} <= set(files)
    said = "Query 6 sees no key" if lang == "en" else "查询 6 看不到任何键"
    assert said in page
