"""Attention as real projects write it (tests/capture_corpus.py), captured: nothing changes, nothing is hidden.

For every style: the output under capture is torch's bit for bit; a fresh
trace verifies clean; no step is opaque; the header's facts (tokens,
embedding size) are the input's; the report, in both languages, shows each
attention's scores and weights as heatmaps, one per head, labelled with the
tokens; and explaining a weight entry leads, step by step, to the products
of the inputs.
"""

from __future__ import annotations

import re
from collections import deque

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import tracer
from tests import capture_corpus as corpus
from tracer.cli import app
from tracer.core.trace import Trace
from tracer.present import report
from tracer.present.captured import attentions, role
from tracer.present.strings import Strings
from tracer.present.views.nodes import anchor

HEADS = {
    "fused": (1, 2), "flash": (1, 2), "packed": (1, 2), "packed_index": (1, 2), "einsum": (1, 2),
    "sdpa_bool": (1, 2), "sdpa_float": (1, 2), "sdpa_dropout": (1, 2), "mha_plain": (1, 2), "mha_masks": (1, 2),
    "mha_float_mask": (1, 2), "window": (1, 1), "gqa": (1, 4), "generate": (corpus.T, 1), "block": (1, 2),
    "lm": (1, 2),
}  # fmt: skip
"""Runner -> (attentions it computes, heads each)."""


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {name: tracer.trace_torch(getattr(corpus, name)) for name in corpus.RUNNERS}


@pytest.mark.parametrize("name", corpus.RUNNERS)
def test_capture_changes_nothing_and_verifies_clean(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    assert np.array_equal(t.tensor(t.meta["output"]), getattr(corpus, name)().detach().numpy())
    result = t.verify()
    assert result.ok, result.summary()
    assert t.meta["opaque"] == []
    assert t.meta["n_tokens"] == corpus.T and t.meta["dim"] == corpus.D


def _weights(attention: list) -> object:  # type: ignore[type-arg]
    return next(n for n in attention if n.op == "softmax" or n.name.endswith(".weights.quot"))


@pytest.mark.parametrize("name", corpus.RUNNERS)
def test_each_attention_is_found_with_its_scores_weights_and_context(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    found = attentions(t)
    count, heads = HEADS[name]
    assert len(found) == count
    for a in found:
        roles = [role(t, a, n) for n in a]
        assert {"scores", "weights", "context"} <= set(roles), (name, roles)
        if name not in ("window", "generate"):  # the two without an output projection
            assert roles.count("out") == 1, (name, roles)
        w = _weights(a)
        per_batch_head = next((n for n in a if n.axes[:2] == ("b", "h") and role(t, a, n) == "weights"), w)
        got = per_batch_head.value.shape[per_batch_head.axes.index("h")] if "h" in per_batch_head.axes else 1
        assert got == heads and per_batch_head.axes[-2:] == ("i", "j"), per_batch_head.axes


@pytest.mark.parametrize("name", ["fused", "packed", "einsum", "sdpa_bool", "mha_masks", "gqa", "generate", "lm"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_report_draws_each_attentions_weights_per_head_with_the_tokens(
    traces: dict[str, Trace], name: str, lang: str
) -> None:
    t = traces[name]
    files = report.build(t, lang)
    page = files["index.html"].decode()
    _, heads = HEADS[name]
    for a in attentions(t):
        w = next((n for n in a if n.axes[:2] == ("b", "h") and role(t, a, n) == "weights"), _weights(a))
        figs = [f"fig-{anchor(w.name)}-h{h}.svg" for h in range(1, heads + 1)] if "h" in w.axes else []
        figs = figs or [f"fig-{anchor(w.name)}.svg"]
        for fig in figs:
            svg = files[fig].decode()
            assert all(tok in svg for tok in t.tokens[: w.value.shape[-2]]), fig
        scores = next(n for n in a if role(t, a, n) == "scores")
        assert any(f.startswith(f"fig-{anchor(scores.name)}") for f in files), scores.name
    assert "Head 1: </" not in page and "**" not in page and "<figcaption></figcaption>" not in page
    assert Strings(lang)("page.summary_unfollowed") not in page  # the loop forms shown follow: no false alarm
    title = f"per head, for {heads} heads" if lang == "en" else f"共 {heads} 个头"
    assert (title if heads > 1 else ("Attention in" if lang == "en" else "中的注意力")) in page  # the section says so
    md = files["index.md"].decode()
    assert re.search(r"_\{[0-9,]+\} &= ", md), "a written-out entry says which entry it is"


def _reaches_products(t: Trace, start: str, limit: int = 20000) -> bool:
    """Following the inputs of ``start`` back, a product of two recorded entries and a given input are reached."""
    seen, todo = {start}, deque([start])
    product = given = False
    while todo and len(seen) < limit:
        step = t[todo.popleft()]
        product |= step.op == "mul" and ".p[" in step.id
        given |= step.op == "input"
        for nxt in step.inputs:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return product and given


@pytest.mark.parametrize("name", corpus.RUNNERS)
def test_a_weight_entry_is_explained_down_to_the_products_of_the_inputs(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    w = _weights(attentions(t)[-1])
    last = [n - 1 for n in w.value.shape]
    entry = [0] * (w.value.ndim - 2) + last[-2:]
    step = tracer.core.ids.render(w.name, w.split, [i + 1 for i in entry])
    assert _reaches_products(t, step), step


@pytest.mark.parametrize("runner", ["generate", "mha_masks", "lm"])
@pytest.mark.parametrize("command", ["report", "notebook"])
def test_the_commands_run_without_a_traceback(tmp_path, runner: str, command: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / (f"{runner}.ipynb" if command == "notebook" else runner)
    res = CliRunner().invoke(app, [command, "--torch", f"tests/capture_corpus.py:{runner}", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output


def test_flex_attention_and_its_block_mask_run_under_capture() -> None:
    flex = pytest.importorskip("torch.nn.attention.flex_attention")

    def run() -> torch.Tensor:
        torch.manual_seed(0)
        q, k, v = (torch.rand(1, 2, 8, 4) for _ in range(3))
        mask = flex.create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, 8, 8, device="cpu")
        return flex.flex_attention(q, k, v, block_mask=mask)

    with pytest.warns(UserWarning):
        t = tracer.trace_torch(run)
    assert np.array_equal(t.tensor(t.meta["output"]), run().numpy())
    assert "flex_attention" in t.meta["opaque"]  # listed, not hidden: no step-by-step form for it


def test_expand_then_reshape_repeat_and_gather_keep_provenance() -> None:
    torch.manual_seed(0)
    proj = torch.nn.Linear(4, 4, bias=False)
    x = torch.rand(1, 2, 3, 4)  # batch, kv heads, tokens, features

    def run() -> torch.Tensor:
        k = proj(x)
        wide = k[:, :, None].expand(1, 2, 2, 3, 4).reshape(1, 4, 3, 4)
        tiled = k.repeat(1, 2, 1, 1)
        picked = torch.gather(k, 2, torch.tensor([[[[2, 0, 1, 1]]]]).expand(1, 2, 1, 4))
        return wide.sum() + tiled.sum() + picked.sum()

    t = tracer.trace_torch(run)
    assert t.meta["opaque"] == [] and t.verify().ok
    assert np.array_equal(t.tensor(t.meta["output"]), run().detach().numpy())
    for name, entry in (("wide", "wide[1,4,3,4]"), ("tiled", "tiled[1,3,2,1]"), ("picked", "picked[1,2,1,1]")):
        assert t.node(name).op in ("reshape", "repeat", "gather"), name
        assert _reaches_products(t, entry), entry
    assert t["picked[1,2,1,1]"].value == t["k[1,2,3,1]"].value  # index 2 (0-based) of the tokens: token 3


def test_an_error_in_the_captured_code_is_the_codes_own_and_leaves_nothing_open() -> None:
    from tracer.record.capture import site

    attn = torch.nn.MultiheadAttention(4, 2)
    x = torch.rand(3, 1, 5)  # 5 features for a module of 4: torch refuses, with or without capture
    with pytest.raises(AssertionError) as plain:
        attn(x, x, x)
    with pytest.raises(AssertionError) as captured, tracer.capture():
        attn(x, x, x)
    assert str(captured.value) == str(plain.value)
    assert not site.OPENED


def test_multihead_attention_in_evaluation_without_grad_is_opened_up_too() -> None:
    torch.manual_seed(0)
    attn = torch.nn.MultiheadAttention(corpus.D, corpus.H, batch_first=True).eval()
    x = torch.rand(1, corpus.T, corpus.D)
    with torch.no_grad():
        fast = attn(x, x, x)[0]  # torch's fast path, without capture
        t = tracer.trace_torch(lambda: attn(x, x, x)[0])
    assert t.meta["opaque"] == [] and t.verify().ok
    assert np.array_equal(t.tensor(t.meta["output"]), fast.numpy())
