"""The check on code as people write it: any signature, fused and named roles, square modules, hard-coded sizes.

The corpus (``tests/check_corpus``) fixes each verdict; these tests fix how
the check got there: how the module was called, which parameter took which
role, which embeddings it ran on, and what the cards and JSON show.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import tracer
from tracer.compare.check import build, lessons, reference, resize
from tracer.compare.check.student import load
from tracer.errors import InputError

CORPUS = Path(__file__).parent / "check_corpus"


def check(name: str, obj: str, lesson: str, **options: int) -> tracer.CheckResult:
    got, source = load(f"{CORPUS / name}:{obj}")
    return tracer.check(got, lesson=lesson, source=source, **options)


def test_a_factory_of_a_config_module_is_built_by_keywords() -> None:
    r = check("multihead_nanogpt_factory.py", "make", "multihead")
    assert r.ok and r.built == "make(d_in=8, d_out=8, context_length=6, dropout=0.5, num_heads=2)"
    assert "square" in r.notes
    roles = {x.role: x.param for x in r.roles}
    assert roles["W_query"] == "c_attn.weight[0:8]" and roles["W_value"] == "c_attn.weight[16:24]"
    assert roles["W_out"] == "c_proj.weight"


def test_parameter_order_and_aliases() -> None:
    r = check("multihead_heads_first.py", "MultiHeadAttention", "multihead")
    assert r.ok and r.built == "MultiHeadAttention(d_in=3, d_out=8, num_heads=2, context_length=6, dropout=0.5)"
    r = check("multihead_annotated.py", "MultiHeadedAttention", "multihead")
    assert r.ok and r.built == "MultiHeadedAttention(h=2, d_model=8, dropout=0.5)"
    assert [x.param for x in r.roles][:4] == [
        "linears.0.weight",
        "linears.1.weight",
        "linears.2.weight",
        "linears.3.weight",
    ]


def test_nn_multihead_attention() -> None:
    r = check("multihead_nn_mha.py", "MHA", "multihead")
    assert r.ok and r.built.startswith("MHA(embed_dim=8, num_heads=2")
    assert {x.role: x.param for x in r.roles}["W_key"] == "attn.in_proj_weight[8:16]"
    # capture opens nn.MultiheadAttention up, so its heads, scores, weights and context are compared one by one
    compared = {s.quantity.key for s in r.stages if s.status == "match"}
    assert {"hq", "hk", "hv", "omega", "alpha", "z", "out"} <= compared
    assert not [s for s in r.stages if s.status == "not compared"] and "opaque" not in r.notes


def test_roles_go_by_name_before_order() -> None:
    r = check("causal_named_kqv.py", "CausalAttention", "causal")
    assert r.ok
    assert [(x.role, x.param) for x in r.roles][:3] == [
        ("W_query", "query.weight"), ("W_key", "key.weight"), ("W_value", "value.weight"),
    ]  # fmt: skip


def test_plan_falls_back_to_position() -> None:
    def positional(a, b, c, d):  # type: ignore[no-untyped-def]
        return None

    values = {"d_in": 3, "d_out": 2, "context_length": 6, "dropout": 0.5}
    order = ("d_in", "d_out", "context_length", "dropout")
    assert build.plan(positional, values, order) == ((3, 2, 6, 0.5), {})
    with pytest.raises(build.Square):
        build.plan(lambda embed_dim, block_size: None, values, order)
    with pytest.raises(InputError, match=r"returned int, not a torch\.nn\.Module"):
        build.build(lambda d_in, d_out, context_length, dropout: 3, values, order, 123)


def test_embeddings_keep_the_tutorial() -> None:
    x = reference.embeddings(3)
    assert torch.equal(reference.embeddings(8)[:, :3], x) and reference.embeddings(8).shape == (6, 8)
    assert torch.equal(reference.embeddings(2), x[:, :2])
    assert torch.equal(reference.embeddings(8), reference.embeddings(8))  # seeded


def test_d_in_option() -> None:
    r = check("causal_book.py", "CausalAttention", "causal", d_in=5)
    assert r.ok and r.built == "CausalAttention(d_in=5, d_out=2, context_length=6, dropout=0.5)"
    assert r.trace.node("x").value.shape == (6, 5)


def test_the_second_build() -> None:
    spec = lessons.SPECS["causal"]
    got = {"d_in": 4, "d_out": 3, "context_length": 9, "dropout": 0.0, "num_heads": 1, "tokens": 7}
    assert resize.sizes(spec) == got and resize.builds(spec) == (got,)
    assert str(resize.describe(spec, resize.sizes(spec))) == "d_in=4, d_out=3, context_length=9, dropout=0.0, 7 tokens"
    r = check("causal_fixed_mask.py", "CausalAttention", "causal")
    assert not r.ok and r.structure == "sizes_ignored" and r.first_divergence is None
    assert r.hit is not None and "RuntimeError" in str(r.hit.detail["detail"])
    doc = r.to_json()
    assert doc["structure"] == "sizes_ignored" and doc["diagnosis"]["code"] == "sizes_ignored"
    assert "另一组尺寸" in r.sentence("zh")


def test_grouped_query_is_a_verdict() -> None:
    r = check("multihead_grouped_query.py", "MultiHeadAttention", "multihead")
    assert not r.ok and r.structure == "grouped_query"
    text = r.explain("en")
    assert "DIFFERS from the lesson in its structure" in text and "W_key.weight 3 -> 4" in text


def test_skipped_stages_show_no_tensor_of_theirs() -> None:
    from tracer.present.checkpage import render_check

    r = check("causal_book.py", "CausalAttention", "causal")
    skipped = [s for s in r.stages if s.status == "skipped"]
    assert skipped and all(s.evidence is None for s in skipped)
    doc = json.loads(r.dumps())
    assert all(s["student_tensor"] is None for s in doc["stages"] if s["status"] == "skipped")
    page = render_check(r, "en")
    assert page.count("it computes this stage another way") == len(skipped)


def test_matched_cards_show_the_students_values_of_that_stage() -> None:
    """With the book's in-place masked_fill_, each matching card shows that stage's values (masked where masked)."""
    import re

    from tracer.present.checkpage import render_check

    r = check("causal_book.py", "CausalAttention", "causal")
    page = render_check(r, "en")
    cards = re.findall(r'<section class="card[^"]*" id="q\d+">(.*?)</section>', page, re.S)
    matched = [c for c in cards if "badge match" in c]
    assert len(matched) == sum(1 for s in r.stages if s.status == "match")
    for c in matched:
        tables = re.findall(r"<table>(.*?)</table>", c, re.S)
        cells = [re.findall(r"<td[^>]*>([^<]*)</td>", t) for t in tables]
        assert len(cells) == 2 and cells[0] == cells[1]
    masked = next(c for c in matched if "batch.neg.omega" in c)
    assert "-inf" in masked and 'class="bad"' not in masked
