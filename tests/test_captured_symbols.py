"""Captured formulas write tensors as symbols, not step ids; a generation loop's values are named by their step.

A captured op's formula names its operands; they used to be the ids
(``\\sum_d \\mathrm{q.view.transpose}\\, \\mathrm{k.view.transpose.transpose}``).
Now each is the code's variable as a symbol (``q'``, ``k'^{\\top}``,
``W_{\\mathrm{c\\_attn}}``): no report of the capture corpora has an id in
its maths, every symbol of a page stands for one tensor and each tensor
reads the same everywhere.  A KV-cache loop's values are the code's
variable at the step that made them ("``k_new`` at step 2"), not the
module's path with a number ("``k`` (value 2)").
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch

import tracer
from tests import capture_corpus as corpus
from tests import capture_corpus_complex as complex_corpus
from tests import capture_corpus_more as more
from tests import capture_corpus_unseen as unseen
from tracer.core import formula
from tracer.core.trace import Trace
from tracer.present import report

RUNS: dict[str, Callable[[], torch.Tensor]] = {
    **{f"corpus.{n}": getattr(corpus, n) for n in corpus.RUNNERS},
    **{f"more.{n}": getattr(more, n) for n in more.RUNNERS},
    **{f"unseen.{n}": getattr(unseen, n) for n in unseen.RUNNERS},
    "complex.meta_rope": complex_corpus.meta_rope,
}
ID_IN_MATHS = re.compile(r"\\mathrm\{[A-Za-z0-9_\\]*\.[^{}]*\}")
"""``\\mathrm{`` around a dotted id (``\\mathrm{att.matmul}``, ``\\mathrm{attn.c\\_attn}``)."""
CHECK = re.compile(r"^\\max \\lvert (?P<a>.+) - (?P<b>.+) \\rvert$")


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {name: tracer.trace_torch(run) for name, run in RUNS.items()}


@pytest.mark.parametrize("name", list(RUNS))
def test_no_formula_of_a_captured_trace_names_an_id(traces: dict[str, Trace], name: str) -> None:
    t = traces[name]
    for n in t.nodes:
        for latex in (n.latex, n.symbol):
            assert not ID_IN_MATHS.search(latex), (n.name, latex)
    named = [n for n in t.nodes if n.op == "input" and "." in n.name]  # weights: ``W_{…}``, never the path
    assert all("." not in n.latex for n in named), [(n.name, n.latex) for n in named]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["corpus.fused", "corpus.generate", "more.mingpt", "unseen.gpt2", "unseen.t5"])
def test_no_captured_report_has_an_id_in_its_maths(traces: dict[str, Trace], name: str, lang: str) -> None:
    md = report.build(traces[name], lang, formats=("md",))["index.md"].decode()
    maths = re.findall(r"\$\$(.*?)\$\$|\$([^$\n]+)\$", md, flags=re.S)
    assert maths
    for block, inline in maths:
        assert not ID_IN_MATHS.search(block or inline), block or inline


def _symbols(t: Trace) -> dict[str, set[str]]:
    """Symbol -> the ids it stands for, read from the formulas: a sum's left side, a check's two sides."""
    out: dict[str, set[str]] = {}
    for n in t.nodes:
        if " = " in n.latex and n.op in ("sum", "add") and n.name.rpartition(".")[2] not in ("loop", "s", "sum"):
            out.setdefault(formula.stated_symbol(n.latex, True), set()).add(n.name)
        m = CHECK.match(n.latex)
        if m and n.name.startswith("check.") and len(n.args) == 2:
            for side, ref in zip((m.group("a"), m.group("b")), n.args, strict=True):
                out.setdefault(side, set()).add(ref.node)
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_each_symbol_of_a_page_is_one_tensor_and_each_tensor_one_symbol(traces: dict[str, Trace], name: str) -> None:
    table = _symbols(traces[name])
    assert table, name
    shared = {sym: ids for sym, ids in table.items() if len(ids) > 1}
    assert not shared, shared
    by_id: dict[str, set[str]] = {}
    for sym, ids in table.items():
        for i in ids:
            by_id.setdefault(i, set()).add(sym)
    assert all(len(syms) == 1 for syms in by_id.values()), {i: s for i, s in by_id.items() if len(s) > 1}


def test_fused_attention_reads_as_a_textbook(traces: dict[str, Trace]) -> None:
    t = traces["corpus.fused"]  # nanoGPT's style: q, k, v split from c_attn, heads by view/transpose
    assert t.node("att.matmul").latex == r"{\mathit{att}^{\mathrm{matmul}}} = \sum_{d} {q'}\, {k'^{\top}}"
    assert t.node("y").latex == r"y = \sum_{j} {\mathit{att}^{\mathrm{softmax}}}\, {v'}"
    assert t.node("c_attn.weight").latex == r"{W_{\mathrm{c\_attn}}}"
    assert t.node("check.c_attn").latex == r"\max \lvert {c_{\mathrm{attn}}} - {\widetilde{c_{\mathrm{attn}}}} \rvert"
    md = report.build(t, "en", formats=("md",))["index.md"].decode()
    assert r"{\mathit{att}^{\mathrm{matmul}}}_{1121} &= \sum_{d} {q'}\, {k'^{\top}} \\" in md
    html = report.build(t, "en", formats=("html",))["index.html"].decode()
    assert "q.view.transpose" not in re.sub(r"<(?!math)[^>]*>", "", " ".join(re.findall(r"<math.*?</math>", html)))


def test_a_clash_takes_the_module_the_variable_lives_in(traces: dict[str, Trace]) -> None:
    t = traces["unseen.gpt2"]  # Conv1D's ``x = torch.addmm(…)`` in c_attn and again in c_proj
    assert t.node("c_attn.x").latex.startswith("x = ")
    assert t.node("c_proj.x").latex.startswith(r"{x^{\mathrm{c\_proj}}} = ")


@pytest.mark.parametrize(
    ("lang", "said", "old"),
    [("en", "`k_new` at step 2", "`k` (value 2)"), ("zh", "第 2 步的 `k_new`", "`k`（第 2 个值）")],
)
def test_a_kv_cache_loops_values_are_named_by_their_step(
    traces: dict[str, Trace], lang: str, said: str, old: str
) -> None:
    t = traces["corpus.generate"]  # the module called once per token: k_new, v_new per call
    names = {n.name for n in t.nodes}
    assert {"k_new", "k_new_2", "k_new_5", "v_new_5"} <= names and "k_2" not in names
    assert t.meta["steps"]["k_new_2"] == 2 and t.meta["steps"]["cache_k"] == 2  # the cache grows from call 2
    md = report.build(t, lang, formats=("md",))["index.md"].decode()
    assert said in md and old not in md
    assert ("`scores` at step 3" if lang == "en" else "第 3 步的 `scores`") in md


def test_a_module_called_once_keeps_its_values_numbered(traces: dict[str, Trace]) -> None:
    t = traces["unseen.gpt2"]
    assert t.meta["steps"] == {}
    assert "`attn_weights` (value 2)" in report.build(t, "en", formats=("md",))["index.md"].decode()
