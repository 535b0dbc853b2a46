"""Attention styles the other corpora lack (tests/capture_corpus_unseen.py), captured as a new user would.

Llama's rotary embedding and ``repeat_kv``, GPT-2's ``Conv1D`` (``addmm``),
BLOOM's ``baddbmm`` with ALiBi, T5's relative position bias, cross-attention
(3 queries, 5 keys), in-place masks, SDPA with ``scale=`` and
``enable_gqa``, ``F.multi_head_attention_forward`` called directly,
``F.linear`` on slices of one weight, query chunks, a padding mask from token
ids.  For each: the output under capture is torch's bit for bit; the fresh
trace verifies clean (``verify`` exits 0: no false "edited"); every
attention is found with its scores, weights and context, with the right
number of heads and of queries; the report draws the scores and the weights
as heatmaps, one per head, labelled with the tokens; ``report`` and
``notebook`` run; a weight entry explains down to the products of the inputs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import tracer
from tests import capture_corpus_unseen as unseen
from tests.hostile import seal
from tests.test_capture_corpus import _reaches_products
from tracer.cli import app
from tracer.core import serialize
from tracer.core.trace import Node, Trace
from tracer.present import report
from tracer.present.captured import attentions, role
from tracer.present.views.nodes import anchor

FILE = "tests/capture_corpus_unseen.py"


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {name: tracer.trace_torch(getattr(unseen, name)) for name in unseen.RUNNERS}


def _weights(t: Trace, attention: list[Node]) -> Node:
    """The weights per batch and head where the code has them, else the softmax (or SDPA's weights)."""
    softmax = next(n for n in attention if n.op == "softmax" or n.name.endswith(".weights.quot"))
    return next((n for n in attention if n.axes[:2] == ("b", "h") and role(t, attention, n) == "weights"), softmax)


@pytest.mark.parametrize("name", unseen.RUNNERS)
def test_capture_changes_nothing_and_a_fresh_trace_verifies_clean(
    traces: dict[str, Trace], name: str, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    t = traces[name]
    assert np.array_equal(t.tensor(t.meta["output"]), getattr(unseen, name)().detach().numpy())
    result = t.verify()
    assert result.ok, result.summary()
    assert t.meta["opaque"] == [], t.meta["opaque"]
    path = tmp_path / f"{name}.json"
    res = CliRunner().invoke(app, ["trace", "--torch", f"{FILE}:{name}", "-o", str(path)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["verify", str(path)])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("name", unseen.RUNNERS)
def test_each_attention_is_found_with_its_heads_and_its_queries(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    found = attentions(t)
    count, heads = unseen.HEADS[name]
    assert len(found) == count, [[n.name for n in a] for a in found]
    queries = unseen.QUERIES.get(name)
    for a in found:
        roles = [role(t, a, n) for n in a]
        assert {"scores", "weights", "context"} <= set(roles), (name, roles)
        w = _weights(t, a)
        got = w.value.shape[w.axes.index("h")] if "h" in w.axes else 1
        assert got == heads and w.axes[-2:] == ("i", "j"), (w.name, w.axes, w.value.shape)
        if queries is not None:
            assert w.value.shape[-2:] == (queries, unseen.T), w.value.shape


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", unseen.RUNNERS)
def test_the_report_draws_scores_and_weights_per_head_with_the_tokens(
    traces: dict[str, Trace], name: str, lang: str
) -> None:
    t = traces[name]
    files = report.build(t, lang)
    _, heads = unseen.HEADS[name]
    for a in attentions(t):
        w = _weights(t, a)
        figs = [f"fig-{anchor(w.name)}-h{h}.svg" for h in range(1, heads + 1)] if "h" in w.axes else []
        assert f"fig-{anchor(w.name)}-h{heads + 1}.svg" not in files  # one heatmap per head, no more
        for fig in figs or [f"fig-{anchor(w.name)}.svg"]:
            assert fig in files, (fig, sorted(f for f in files if f.startswith("fig-")))
            svg = files[fig].decode()
            assert all(f">{tok}<" in svg for tok in t.tokens[: w.value.shape[-1]]), fig
        scores = next(n for n in a if role(t, a, n) == "scores")
        assert any(f.startswith(f"fig-{anchor(scores.name)}") for f in files), scores.name
    page = files["index.html"].decode()
    assert "Head 1: </" not in page and "<figcaption></figcaption>" not in page


@pytest.mark.parametrize("name", unseen.RUNNERS)
def test_a_weight_entry_is_explained_down_to_the_products_of_the_inputs(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    w = _weights(t, attentions(t)[-1])
    entry = [1] * (w.value.ndim - 2) + [int(w.value.shape[-2]), 2]  # the last query against the second key
    step = tracer.core.ids.render(w.name, w.split, entry)
    assert _reaches_products(t, step), step


@pytest.mark.parametrize("name", ["llama", "cross", "mha_functional", "padded"])
@pytest.mark.parametrize("command", ["report", "notebook"])
def test_report_and_notebook_run_without_a_traceback(tmp_path, name: str, command: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / (f"{name}.ipynb" if command == "notebook" else name)
    res = CliRunner().invoke(app, [command, "--torch", f"{FILE}:{name}", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output and out.exists()


def test_cross_attention_labels_every_key(traces: dict[str, Trace]) -> None:
    t = traces["cross"]
    w = _weights(t, attentions(t)[0])
    svg = report.build(t, "en")[f"fig-{anchor(w.name)}-h1.svg"].decode()
    texts = re.findall(r">([^<>]+)</text>", svg)
    labels = [x for x in texts if not re.fullmatch(r"−?-?[0-9]+\.[0-9]+", x) and " " not in x]  # no cells, axis titles
    assert len(labels) == 3 + unseen.T, labels  # a label per query row and one per key column


def test_an_edited_embedding_look_up_is_named(traces: dict[str, Trace]) -> None:
    t = traces["padded"]
    assert t.node("x").op == "lookup" and "x" not in t.verify().unchecked
    doc = serialize.to_dict(t)
    spec = next(n for n in doc["nodes"] if n["name"] == "x")
    spec["value"]["data"][0] += 0.25
    assert serialize.loads(seal(doc)).verify().wrong[0].node == "x"  # and what follows from it
    assert not t["x[1,4,1]"].value and not t["x[1,5,1]"].value  # the pad tokens' rows are zeros (padding_idx)


@pytest.mark.parametrize(("name", "node"), [("t5", "buckets.clamp"), ("llama", "freqs"), ("llama", "cos_cached")])
def test_an_edited_clamp_outer_or_cos_is_named(traces: dict[str, Trace], name: str, node: str) -> None:
    t = traces[name]
    assert t.node(node).op in ("clamp", "mul", "cos") and node not in t.verify().unchecked
    doc = serialize.to_dict(t)
    spec = next(n for n in doc["nodes"] if n["name"] == node)
    spec["value"]["data"][1] += 0.5
    assert serialize.loads(seal(doc)).verify().wrong[0].node == node


def test_baddbmm_with_beta_and_alpha_is_followed_within_its_bound() -> None:
    torch.manual_seed(0)
    m, a, b = torch.randn(2, 3, 4), torch.randn(2, 3, 5), torch.randn(2, 5, 4)
    t = tracer.trace_torch(lambda: torch.baddbmm(m, a, b, beta=0.5, alpha=0.25))
    assert t.meta["opaque"] == [] and t.verify().ok
    assert np.array_equal(t.tensor(t.meta["output"]), torch.baddbmm(m, a, b, beta=0.5, alpha=0.25).numpy())
    out = t.meta["output"]
    assert {f"{out}.alpha", f"{out}.beta", f"{out}.loop", f"check.{out}"} <= {n.name for n in t.nodes}
    assert t[f"{out}.alpha[1,1,1]"].value == np.float32(0.25) * t[f"{out}.xw[1,1,1]"].value


def test_a_mask_made_by_new_full_is_made_not_an_opaque_step() -> None:
    torch.manual_seed(0)
    q, k = torch.randn(1, 5, 4), torch.randn(1, 5, 4)

    def run() -> torch.Tensor:
        scores = q @ k.mT
        return torch.softmax(scores + scores.new_full((5, 5), float("-inf")).triu(1), dim=-1)

    t = tracer.trace_torch(run)
    assert t.meta["opaque"] == [] and t.verify().ok and t.verify().unchecked == ()
    made = [n.attrs.get("made_by") for n in t.nodes if n.op == "input"]
    assert "Tensor.new_full(5, 5)" in made, made


@pytest.mark.parametrize("eq", ["...id,...jd->...ij", "b h i d, b h j d -> b h i j", "...id,...jd"])
def test_einsum_with_an_ellipsis_is_followed_to_its_products(eq: str) -> None:
    torch.manual_seed(0)
    q, k = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    t = tracer.trace_torch(lambda: torch.einsum(eq, q, k).softmax(-1))
    assert t.meta["opaque"] == [] and t.verify().ok and t.verify().unchecked == ()
    assert np.array_equal(t.tensor(t.meta["output"]), torch.einsum(eq, q, k).softmax(-1).numpy())
    w = attentions(t)[0][-1]
    assert w.value.shape == (1, 2, 5, 5) and _reaches_products(t, tracer.core.ids.render(w.name, w.split, [1, 2, 5, 2]))
