"""What a teacher reads of a captured report: words, not ids; constants as constants; helpers by their name.

Issue 22, items 3 to 5 and 7, in both languages: a caption names its
tensor as the code does (``q``, in backticks) and says in words what was
done to it ("viewed, then transposed"), never the id ``q.view.transpose``
as prose; a mask built with ``torch.ones(T, T)`` is the code's own
constant, not an input; the statements of a helper function are titled
with its name and its caller's; every heatmap caption and batch note is a
whole sentence.
"""

from __future__ import annotations

import re

import pytest

import tracer
from tests import capture_corpus as corpus
from tests import capture_corpus_more as more
from tracer.core.trace import Trace
from tracer.present import report
from tracer.present.captured import captions, narrative, stage_story
from tracer.present.idwords import words
from tracer.present.strings import Strings


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    runs = {"fused": corpus.fused, "padding": more.mha_batch_padding, "annotated": more.annotated}
    return {name: tracer.trace_torch(run) for name, run in runs.items()}


@pytest.mark.parametrize(
    ("name", "en", "zh"),
    [
        ("q.view.transpose", "`q` (viewed, then transposed)", "`q`（改变形状，再转置）"),
        ("att.matmul", "the matrix product computed for `att`", "为 `att` 计算的矩阵乘积"),
        ("att_masked_fill", "`att` (after `masked_fill`)", "`att`（`masked_fill` 之后）"),
        ("x_2.matmul", "the matrix product computed for `x` (value 2)", "为 `x`（第 2 个值） 计算的矩阵乘积"),
        ("linears_3.loop", "`linears.3` (summed left to right)", "`linears.3`（从左到右累加）"),
        ("bias.getitem", "`bias` (indexed)", "`bias`（索引取值）"),
        ("attn.weights", "`attn.weights`", "`attn.weights`"),
    ],
)
def test_an_id_is_said_in_words(name: str, en: str, zh: str) -> None:
    modules = {"linears_3": "linears.3"}
    assert words(name, Strings("en"), modules=modules) == en
    assert words(name, Strings("zh"), modules=modules) == zh
    assert "`" not in words(name, Strings("en"), code=False, modules=modules)


IDS = re.compile(r"`?[A-Za-z_][A-Za-z0-9_]*\.(view|transpose|matmul|getitem|compare|unflatten|loop)\b`?|_masked_fill`")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["fused", "padding", "annotated"])
def test_no_caption_or_paragraph_prints_an_id_as_prose(traces: dict[str, Trace], name: str, lang: str) -> None:
    t = traces[name]
    story = narrative(t, lang)
    texts = [v for n in story.nodes.values() for v in (n.caption, n.figure, n.alt)]
    texts += [str(st.text) for st in story.stages.values()]
    for text in texts:
        assert not IDS.search(text), text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_mask_made_from_ones_is_a_constant_of_the_code(traces: dict[str, Trace], lang: str) -> None:
    s = Strings(lang)
    for name in ("fused", "annotated"):
        text = str(stage_story(traces[name], "inputs", s)["text"])
        given = text.split(s("capture.inputs_consts", consts="@").split("@")[0])[0]
        assert "`ones`" not in given, text  # not among the inputs given to the code
        assert "`torch.ones`" in text, text
    cap = captions(traces["fused"], s)["ones"]["caption"]
    want = {"en": "a constant the code built itself (`torch.ones`, 16 × 16)"}
    want["zh"] = "代码自己构造的常量（`torch.ones`，16 × 16）"
    assert want[lang] in cap
    assert captions(traces["fused"], s)["x"]["caption"].startswith("`x`")


def test_a_helpers_statements_are_titled_with_its_name_and_its_caller(traces: dict[str, Trace]) -> None:
    en = {k: str(v.title) for k, v in narrative(traces["annotated"], "en").stages.items()}
    zh = {k: str(v.title) for k, v in narrative(traces["annotated"], "zh").stages.items()}
    assert en["scores"].startswith("attention(), called from MultiHeaded.forward, scores = …: ")
    assert en["p_attn"].startswith("Attention in attention(), called from MultiHeaded.forward, p_attn = …: ")
    assert zh["scores"].startswith("MultiHeaded.forward 调用的 attention() 中的 scores = …：")
    assert en["causal"].startswith("annotated(), causal = …: ")  # the captured function's own statement
    assert zh["causal"].startswith("annotated() 的 causal = …：")
    assert en["query_key_value"].startswith("MultiHeaded.forward, query, key, value = …: ")  # a comprehension's
    assert en["mask"].startswith("MultiHeaded.forward, mask = …: ")


def test_a_forged_functions_table_is_ignored(traces: dict[str, Trace]) -> None:
    t = traces["annotated"]
    forged = Trace(list(t.nodes), {**t.meta, "functions": {"scores": ["<script>", 3], "p_attn": "x"}})
    titles = {k: str(v.title) for k, v in narrative(forged, "en").stages.items()}
    assert titles["scores"].startswith("MultiHeaded.forward, scores = …") and "<script>" not in titles["scores"]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["fused", "padding"])
def test_every_caption_on_the_page_is_a_whole_sentence(traces: dict[str, Trace], name: str, lang: str) -> None:
    md = report.build(traces[name], lang)["index.md"].decode()
    broken = (". for every pair", "。 for", ". differ", "。 在其他样本", "****", "``", "(—)", "（—）", "Head 1: Head")
    for bad in broken:
        assert bad not in md, bad
    assert "Heatmap of the matrix" not in md
    if name == "fused":  # the causal buffer (1, 1, 16, 16) is shared by every head: not "Head 1"
        assert not re.search(r"(Head|头) 1[:：] `bias`", md), md


def test_a_broadcast_mask_is_drawn_once_not_as_head_1(traces: dict[str, Trace]) -> None:
    files = report.build(traces["fused"], "en")
    assert "fig-bias.svg" in files and "fig-bias-h1.svg" not in files
    assert "fig-att-softmax-h1.svg" in files and "fig-att-softmax-h2.svg" in files  # the weights: per head


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(("name", "said", "unsaid"), [("llama", "−3.4028e+38", "−inf"), ("t5", "ALiBi", "−inf")])
def test_a_mask_caption_says_what_the_code_put_where_a_query_may_not_look(
    lang: str, name: str, said: str, unsaid: str
) -> None:
    """Hugging Face's ``finfo(float32).min`` is said as that number; T5's position bias (either sign) as a bias."""
    from tests import capture_corpus_unseen as unseen
    from tracer.present.captured import attentions, role
    from tracer.present.strings import Strings

    t = tracer.trace_torch(getattr(unseen, name))
    caps = captions(t, Strings(lang))
    masks = [n for a in attentions(t) for n in a if role(t, a, n) == "mask"]
    assert masks, name
    for n in masks:
        assert said in caps[n.name]["caption"] and unsaid not in caps[n.name]["caption"], caps[n.name]


@pytest.mark.parametrize(
    ("lang", "title"),
    [
        ("en", "Attention in return … of SlidingWindow.forward()"),
        ("zh", "SlidingWindow.forward() 的 return … 中的注意力"),
    ],
)
def test_an_attention_in_the_return_statement_is_titled_as_one(lang: str, title: str) -> None:
    """``return torch.softmax(scores, -1) @ v``: the section holding the weights says it is the attention."""
    t = tracer.trace_torch(corpus.window)
    heads = [line for line in report.build(t, lang)["index.md"].decode().splitlines() if line.startswith("## ")]
    assert any(title in h for h in heads), heads
