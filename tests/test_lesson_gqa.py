"""Lesson ``gqa``: every traced tensor against grouped-query attention written here in plain PyTorch.

The reference is the module as a textbook writes it (LLMs-from-scratch's
``GroupedQueryAttention``: ``view``, ``transpose``, ``repeat_interleave``,
``masked_fill``, ``softmax``), run on the same batch; it shares no code with
the pipeline.  G = H must be the multi-head lesson exactly, G = 1 multi-query.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import tracer
from tests.gold import compare
from tracer.cli import app
from tracer.errors import InputError
from tracer.present import narrative, report

ROOT = Path(__file__).resolve().parent.parent


def textbook(x: torch.Tensor, d_out: int, heads: int, groups: int) -> dict[str, torch.Tensor]:
    """The module's intermediate tensors, head-first as the trace lays them out (``[h, b, i, c]``)."""
    dt, (t, d_in) = x.dtype, x.shape
    hd, r = d_out // heads, heads // groups
    torch.manual_seed(123)
    wq = torch.nn.Linear(d_in, d_out, bias=False)
    wk = torch.nn.Linear(d_in, groups * hd, bias=False)
    wv = torch.nn.Linear(d_in, groups * hd, bias=False)
    wo = torch.nn.Linear(d_out, d_out, bias=False)
    w = {n: m.weight.detach().T.to(dt) for n, m in (("W_query", wq), ("W_key", wk), ("W_value", wv), ("W_out", wo))}
    batch = torch.stack((x, x))
    q, k, v = batch @ w["W_query"], batch @ w["W_key"], batch @ w["W_value"]
    hq = q.view(2, t, heads, hd).transpose(1, 2)
    hk = k.view(2, t, groups, hd).transpose(1, 2)
    hv = v.view(2, t, groups, hd).transpose(1, 2)
    kh, vh = hk.repeat_interleave(r, dim=1), hv.repeat_interleave(r, dim=1)
    omega = hq @ kh.transpose(2, 3)
    mask = torch.triu(torch.ones(t, t), diagonal=1).bool()
    neg = omega.masked_fill(mask, -torch.inf)
    alpha = torch.softmax(neg / hd**0.5, dim=-1)
    z = alpha @ vh
    concat = z.transpose(1, 2).reshape(2, t, d_out)
    head_first = {"hq": hq, "hk": hk, "hv": hv, "kh": kh, "vh": vh, "omega": omega, "neg.omega": neg}
    out = {n: a.transpose(0, 1) for n, a in head_first.items()}
    out.update({"causal.alpha": alpha.transpose(0, 1), "z": z.transpose(0, 1)})
    out.update({"x": batch, "q": q, "k": k, "v": v, "concat": concat, "out": concat @ w["W_out"], **w})
    out["group"] = torch.tensor([h // r + 1 for h in range(heads)], dtype=dt)
    out["mask.tril"], out["mask.triu"] = (~mask).to(dt), mask.to(dt)
    out["mha.W_key"] = torch.cat([w["W_key"][:, (h // r) * hd : (h // r + 1) * hd] for h in range(heads)], dim=1)
    out["mha.W_value"] = torch.cat([w["W_value"][:, (h // r) * hd : (h // r + 1) * hd] for h in range(heads)], dim=1)
    out["mha.hk"], out["mha.hv"] = out["kh"], out["vh"]
    out.update({"cache.mha": torch.tensor(2.0 * heads * hd), "cache.gqa": torch.tensor(2.0 * groups * hd)})
    out["cache.ratio"] = torch.tensor(heads / groups)
    out["mha.k"], out["mha.v"] = batch @ out["mha.W_key"], batch @ out["mha.W_value"]
    out["check.kh"] = out["check.vh"] = torch.tensor(0.0)
    out["sqrt_dk"] = torch.tensor(hd**0.5, dtype=dt)
    scaled = out["neg.scaled"] = out["neg.omega"] / out["sqrt_dk"]
    m = scaled.max(dim=-1).values
    e = torch.exp(scaled - m[..., None])
    out.update({"causal.max": m, "causal.shift": scaled - m[..., None], "causal.exp": e})
    out.update({"causal.sum.s": e.cumsum(-1), "causal.sum": e.sum(-1)})
    out.update({"causal.alpha_sum.s": out["causal.alpha"].cumsum(-1), "causal.alpha_sum": out["causal.alpha"].sum(-1)})
    # every sum's terms and running sums, in the trace's layout (the summed axis last)
    for name, xs, wn in (("q", batch, "W_query"), ("k", batch, "W_key"), ("v", batch, "W_value")):
        _parts(out, name, xs[:, :, None, :] * w[wn].T[None, None])
    for name, wn in (("mha.k", "mha.W_key"), ("mha.v", "mha.W_value")):
        _parts(out, name, batch[:, :, None, :] * out[wn].T[None, None])
    _parts(out, "out", concat[:, :, None, :] * w["W_out"].T[None, None])
    _parts(out, "omega", out["hq"][:, :, :, None, :] * out["kh"][:, :, None, :, :])
    terms = out["causal.alpha"][..., None] * out["vh"][:, :, None, :, :]  # [h, b, i, j, c]: summed over j
    out["z.t"], out["z.s"] = terms, terms.cumsum(dim=3)
    return out


def _parts(out: dict[str, torch.Tensor], name: str, products: torch.Tensor) -> None:
    """``name.p``: the products (summed axis last); ``name.s``: their running sums, left to right."""
    out[f"{name}.p"], out[f"{name}.s"] = products, products.cumsum(dim=-1)


CASES = [(8, 4, 2, "float32"), (8, 4, 1, "float64"), (8, 4, 4, "float32"), (6, 3, 1, "float32"), (12, 6, 3, "float64")]


@pytest.mark.parametrize(("d_out", "heads", "groups", "dtype"), CASES)
def test_every_node_is_the_textbook_module(d_out: int, heads: int, groups: int, dtype: str) -> None:
    t = tracer.trace_lesson("gqa", d_out=d_out, heads=heads, groups=groups, dtype=dtype)
    x = torch.tensor(t.tensor("x")[0])
    want = textbook(x, d_out, heads, groups)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-14}
    names = [n.name for n in t.nodes]
    assert sorted(names) == sorted(want), set(names) ^ set(want)  # every node is compared, none is missing
    for node in t.nodes:
        got, exp = np.asarray(node.value, np.float64), want[node.name].to(torch.float64).numpy()
        assert got.shape == exp.shape and np.allclose(got, exp, equal_nan=True, **tol), node.name
    assert float(t["check.kh"].value) == 0.0 and float(t["check.vh"].value) == 0.0


def test_as_many_groups_as_heads_is_the_multihead_lesson_bit_for_bit() -> None:
    mha = tracer.trace_lesson("multihead")  # 2 heads, d_out = 2, seed 123: the same draws
    g = tracer.trace_lesson("gqa", heads=2, groups=2, d_out=2)
    pairs = [("q", "split.q"), ("k", "split.k"), ("v", "split.v"), ("hq", "split.hq"), ("hk", "split.hk")]
    pairs += [("kh", "split.hk"), ("vh", "split.hv"), ("omega", "split.omega"), ("neg.omega", "split.neg.omega")]
    pairs += [("causal.alpha", "split.causal.alpha"), ("z", "split.z"), ("concat", "split.concat")]
    pairs += [("W_out", "split.W_out"), ("out", "split.proj")]
    for a, b in pairs:
        assert np.array_equal(g.tensor(a), mha.tensor(b)), (a, b)
    assert float(g["cache.ratio"].value) == 1.0


def test_one_group_is_multi_query_attention() -> None:
    t = tracer.trace_lesson("gqa", groups=1)
    kh, vh = t.tensor("kh"), t.tensor("vh")
    assert all(np.array_equal(kh[h], kh[0]) and np.array_equal(vh[h], vh[0]) for h in range(4))
    assert t.tensor("W_key").shape == (3, 2) and float(t["cache.ratio"].value) == 4.0
    assert t.tensor("group").tolist() == [1, 1, 1, 1]


def test_each_head_reads_its_group_and_says_so() -> None:
    t = tracer.trace_lesson("gqa")
    assert t.tensor("group").tolist() == [1, 1, 2, 2]
    assert t["kh[3,1,2,1]"].inputs == ("hk[2,1,2,1]",) and t["kh[2,1,2,1]"].inputs == ("hk[1,1,2,1]",)
    assert t["hq[3,1,2,2]"].inputs == ("q[1,2,6]",) and t["concat[1,2,5]"].inputs == ("z[3,1,2,1]",)
    assert t["mha.W_key[2,7]"].inputs == ("W_key[2,3]",)
    assert float(t["cache.mha"].value) == 16 and float(t["cache.gqa"].value) == 8


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"groups": 3}, "groups must divide the 4 query heads"),
        ({"d_out": 6}, "d_out must be divisible by the 4 heads"),
        ({"heads": 0}, "heads must be a positive whole number"),
        ({"groups": 1.5}, "groups must be a positive"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        tracer.trace_lesson("gqa", **options)


def test_the_cli_takes_heads_and_groups(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    ok = CliRunner().invoke(app, ["trace", "--lesson", "gqa", "--heads", "2", "--groups", "1", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert tracer.load(out).meta["groups"] == 1
    bad = CliRunner().invoke(app, ["trace", "--lesson", "gqa", "--groups", "3"])
    assert bad.exit_code == 2 and "--groups must divide the 4 query heads" in bad.output
    assert "Traceback" not in bad.output


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_committed_reports_are_current(lang: str) -> None:
    compare(ROOT / "reports" / "gqa" / lang, report.build(tracer.trace_lesson("gqa"), lang))


def test_narratives_agree_and_name_real_nodes() -> None:
    en, zh = narrative.load("gqa", "en"), narrative.load("gqa", "zh")
    assert {n: s.lists() for n, s in en.stages.items()} == {n: s.lists() for n, s in zh.stages.items()}
    assert {n: (x.formula, x.row) for n, x in en.nodes.items()} == {n: (x.formula, x.row) for n, x in zh.nodes.items()}
    t = tracer.trace_lesson("gqa")
    assert list(en.stages) == list(t.stages)
    for story in (en, zh):
        for st in story.stages.values():
            for name in [*(st.show or ()), *st.heatmap, *st.bars, *st.write]:
                t.node(name)
                assert story.node(name).caption, name


def test_the_page_shows_one_block_per_group_and_per_head() -> None:
    page = report.build(tracer.trace_lesson("gqa"), "en", formats=("md",))["index.md"].decode()
    assert page.count("*Group 1: This group's slice of the keys") == 1
    assert page.count("*Group 2: This group's slice of the keys") == 1
    assert all(f"*Head {h}: The keys query head" in page for h in range(1, 5))
    zh = report.build(tracer.trace_lesson("gqa"), "zh", formats=("md",))["index.md"].decode()
    assert "第 2 组" in zh and "第 4 个头" in zh
