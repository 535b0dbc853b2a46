"""Section titles of a captured report are sentences about what the section shows, in both languages.

A section of an attention says where it is (the module's ``forward``, or the
statement in the root's ``forward``) and which parts of the attention it
shows, per head; any other section says what kinds of steps it holds.  No
title is a bare variable name, and the inputs paragraph never prints a
placeholder for a list that is empty.
"""

from __future__ import annotations

import pytest
import torch

import tracer
from tests import capture_corpus as corpus
from tracer.present.captured import narrative, stage_story
from tracer.present.strings import Strings


def _titles(name: str, lang: str) -> dict[str, str]:
    t = tracer.trace_torch(getattr(corpus, name))
    return {st: str(story.title) for st, story in narrative(t, lang).stages.items()}


def test_an_attention_section_says_where_and_what_it_shows_per_head() -> None:
    en = _titles("fused", "en")
    want = "Attention in FusedCausal.forward, att = …: scores, scaling, mask and weights per head, for 2 heads"
    assert en["att"] == want
    assert en["q_k_v"].startswith("FusedCausal.forward, q, k, v = …: sums of products")
    zh = _titles("fused", "zh")
    want = "FusedCausal.forward 的 att = … 中的注意力：每个头的注意力分数、缩放、掩码和注意力权重，共 2 个头"
    assert zh["att"] == want


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["fused", "mha_masks", "block", "generate", "lm", "einsum"])
def test_no_title_is_a_bare_name(name: str, lang: str) -> None:
    for stage, title in _titles(name, lang).items():
        assert title != stage and "%(" not in title and "``" not in title and "**" not in title, (stage, title)
        if stage not in ("inputs", "build", "output", "main"):  # a section of the code: where, then what
            assert "`" not in title and any(w in title for w in ("=", "forward", "return")), (stage, title)
            assert ": " in title or "：" in title, (stage, title)


def test_multihead_attention_is_named_as_the_module_it_is() -> None:
    en = _titles("mha_masks", "en")
    assert en["attn"].startswith("Attention in nn.MultiheadAttention.forward (attn): scores, mask, weights")
    assert en["mha_masks"].startswith("return … of mha_masks()")


def test_the_inputs_paragraph_never_shows_a_dash_for_an_empty_list() -> None:
    def made_inside() -> torch.Tensor:
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 3)
        return lin(torch.ones(2, 3))  # the input made inside the call is an input; the weights are parameters

    def no_params() -> torch.Tensor:
        x = torch.rand(3, 2)
        return torch.softmax(x @ x.T, dim=-1)

    for run in (made_inside, no_params):
        t = tracer.trace_torch(run)
        for lang in ("en", "zh"):
            text = str(stage_story(t, "inputs", Strings(lang))["text"])
            assert "—" not in text and "()" not in text and "（）" not in text, text


def test_inputs_and_parameters_are_captioned_as_what_they_are() -> None:
    from tracer.present.captured import captions

    t = tracer.trace_torch(corpus.fused)
    for lang, given, param in (
        ("en", "an input of the code", "a parameter or buffer"),
        ("zh", "代码的输入", "模块的参数"),
    ):
        cap = captions(t, Strings(lang))
        assert given in cap["x"]["caption"] and param in cap["c_attn.weight"]["caption"], lang
        assert "elementwise" not in cap["x"]["caption"] and "逐元素" not in cap["x"]["caption"]
