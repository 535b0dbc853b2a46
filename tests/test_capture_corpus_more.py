"""minGPT's and the Annotated Transformer's styles (tests/capture_corpus_more.py), captured as the rest of the corpus.

Output bit-identical, a fresh trace verifying clean, no opaque step, the
header's facts, each attention's heatmaps per head with the tokens in both
languages, a weight explained down to the products, and names that follow
the code: a value a helper function returns is named where the caller
stores it (``x, self.attn = attention(…)``), and each value of a list
comprehension unpacked into names (``query, key, value = [… for lin, x in
zip(…)]``) after its own target.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tracer
from tests import capture_corpus_more as more
from tests.test_capture_corpus import _reaches_products
from tests.test_capture_corpus import _weights as _softmax
from tracer.core.trace import Trace
from tracer.present import report
from tracer.present.captured import attentions, role
from tracer.present.views.nodes import anchor


def _weights(t: Trace, a: list) -> object:  # type: ignore[type-arg]
    """The weights per batch and head where the code has them (``nn.MultiheadAttention``'s view), else the softmax."""
    return next((n for n in a if n.axes[:2] == ("b", "h") and role(t, a, n) == "weights"), _softmax(a))


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {name: tracer.trace_torch(getattr(more, name)) for name in more.RUNNERS}


@pytest.mark.parametrize("name", more.RUNNERS)
def test_capture_changes_nothing_verifies_clean_and_finds_each_attention(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    assert np.array_equal(t.tensor(t.meta["output"]), getattr(more, name)().detach().numpy())
    assert t.verify().ok and t.meta["opaque"] == []
    assert t.meta["n_tokens"] == more.T and t.meta["dim"] == more.D
    count, heads = more.HEADS[name]
    found = attentions(t)
    assert len(found) == count
    for a in found:
        roles = [role(t, a, n) for n in a]
        assert {"scores", "weights", "context", "out"} <= set(roles), roles
        assert ("mask" in roles) == (name in more.MASKED), roles
        w = _weights(t, a)
        assert w.value.shape[w.axes.index("h")] == heads and w.axes[-2:] == ("i", "j"), w.axes  # type: ignore[attr-defined]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", more.RUNNERS)
def test_the_report_draws_the_weights_per_head_with_the_tokens(traces: dict[str, Trace], name: str, lang: str) -> None:
    t = traces[name]
    files = report.build(t, lang)
    _, heads = more.HEADS[name]
    for a in attentions(t):
        w = _weights(t, a)
        for h in range(1, heads + 1):
            svg = files[f"fig-{anchor(w.name)}-h{h}.svg"].decode()  # type: ignore[attr-defined]
            keys = int(w.value.shape[-1])  # type: ignore[attr-defined]
            assert all(f">{tok}<" in svg for tok in t.tokens[:keys]), (w.name, keys)  # type: ignore[attr-defined]
            if int(w.value.shape[-2]) == 1:  # type: ignore[attr-defined]  # a generation step: its query is the newest
                assert re.findall(r">(t[0-9]+)<", svg)[0] == t.tokens[keys - 1], w.name  # type: ignore[attr-defined]
    page = files["index.html"].decode()
    assert "Head 1: </" not in page and "**" not in page and "<figcaption></figcaption>" not in page


@pytest.mark.parametrize("name", more.RUNNERS)
def test_a_weight_entry_is_explained_down_to_the_products(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    w = _softmax(attentions(t)[-1])
    entry = [1] * (w.value.ndim - 2) + [int(w.value.shape[-2]), 2]  # type: ignore[attr-defined]  # the last query
    assert _reaches_products(t, tracer.core.ids.render(w.name, w.split, entry))  # type: ignore[attr-defined]


def test_names_follow_the_code(traces: dict[str, Trace]) -> None:
    mingpt = {n.name for n in traces["mingpt"].nodes}
    assert {"key", "query", "value", "k", "q", "v", "att", "att_masked_fill", "att_softmax", "proj"} <= mingpt
    annotated = {n.name for n in traces["annotated"].nodes}
    assert {"linears_0", "linears_1", "linears_2", "linears_3", "key", "value", "scores", "p_attn"} <= annotated
    assert {"scores_masked_fill", "x", "x.transpose.view"} <= annotated, sorted(annotated)
    assert "matmul" not in annotated and not any(n.startswith("query_key_value") for n in annotated)
