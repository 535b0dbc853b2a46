"""Lesson ``window``: every traced tensor against plain PyTorch written here, and w >= T is the causal lesson.

The reference below is what a textbook would write: the weights drawn as the
book draws them, the mask from its definition (query i sees key j when
i - w < j <= i), loops where the definition is a loop.  It shares no code
with the pipeline.
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
TUTORIAL = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.22, 0.58, 0.33], [0.77, 0.25, 0.10]]
TUTORIAL.append([0.05, 0.80, 0.55])


def textbook(x: torch.Tensor, w: int, d_out: int = 2) -> dict[str, torch.Tensor]:
    """Sliding-window attention the plain way, in ``x``'s dtype; keys are the trace's node names."""
    dt, (t, d_in) = x.dtype, x.shape
    torch.manual_seed(789)
    layers = [torch.nn.Linear(d_in, d_out, bias=False) for _ in range(3)]
    wq, wk, wv = (layer.weight.detach().T.to(dt) for layer in layers)
    out: dict[str, torch.Tensor] = {"x": x, "W_query": wq, "W_key": wk, "W_value": wv}
    for name, wm in (("q", wq), ("k", wk), ("v", wv)):
        prods = x[:, :, None] * wm[None, :, :]  # [i, k, c]
        out[f"{name}.p"] = prods.permute(0, 2, 1)  # [i, c, k]
        out[f"{name}.s"] = prods.cumsum(dim=1).permute(0, 2, 1)
        out[name] = out[f"{name}.s"][..., -1]
    q, k, v = out["q"], out["k"], out["v"]
    prods = q[:, None, :] * k[None, :, :]  # [i, j, c]
    out["omega.p"], out["omega.s"] = prods, prods.cumsum(dim=-1)
    omega = out["omega"] = out["omega.s"][..., -1]
    root = out["sqrt_dk"] = torch.tensor(float(d_out) ** 0.5, dtype=dt)
    future = torch.zeros(t, t, dtype=dt)
    far = torch.zeros(t, t, dtype=dt)
    for i in range(t):
        for j in range(t):
            future[i, j] = 1.0 if j > i else 0.0
            far[i, j] = 1.0 if j <= i - w else 0.0
    out["mask.future"], out["mask.far"], out["mask.hide"] = future, far, future + far
    for pre, soft, hidden in (("", "window", future + far), ("causal.", "causal", future)):
        neg = torch.where(hidden > 0, torch.tensor(-torch.inf, dtype=dt), omega)
        scaled = neg / root
        m = scaled.max(dim=-1).values
        e = torch.exp(scaled - m[:, None])
        alpha = e / e.sum(dim=-1, keepdim=True)
        out.update({f"{pre}neg.omega": neg, f"{pre}neg.scaled": scaled, f"{soft}.max": m})
        out.update({f"{soft}.shift": scaled - m[:, None], f"{soft}.exp": e, f"{soft}.sum.s": e.cumsum(dim=-1)})
        out.update({f"{soft}.sum": e.sum(dim=-1), f"{soft}.alpha": alpha})
        out[f"{soft}.alpha_sum.s"] = alpha.cumsum(dim=-1)
        out[f"{soft}.alpha_sum"] = alpha.sum(dim=-1)
        z = "z" if soft == "window" else "causal.z"
        terms = alpha[:, :, None] * v[None, :, :]  # [i, j, c]
        out[f"{z}.t"], out[f"{z}.s"], out[z] = terms, terms.cumsum(dim=1), terms.sum(dim=1)
    out["diff.alpha"] = out["window.alpha"] - out["causal.alpha"]
    out["check.causal"] = (out["z"] - out["causal.z"]).abs().max()
    return out


CASES = [(TUTORIAL, 3, "float32"), (TUTORIAL, 1, "float64"), (TUTORIAL, 6, "float32"), (None, 2, "float64")]


@pytest.mark.parametrize(("rows", "w", "dtype"), CASES)
def test_every_traced_tensor_is_the_textbook_value(rows: list[list[float]] | None, w: int, dtype: str) -> None:
    data = rows if rows is not None else np.random.default_rng(5).normal(size=(9, 4))
    x = torch.tensor(data, dtype=getattr(torch, dtype))
    t = tracer.trace_lesson("window", inputs=x.numpy(), window=w, dtype=dtype)
    want = textbook(x, w)
    names = [n.name for n in t.nodes]
    assert sorted(names) == sorted(want), set(names) ^ set(want)  # every node is compared, none is missing
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-14}
    for node in t.nodes:
        got = np.asarray(node.value, dtype=np.float64)
        exp = want[node.name].to(torch.float64).numpy()
        assert got.shape == exp.shape, node.name
        assert np.allclose(got, exp, equal_nan=True, **tol), node.name
        assert np.array_equal(np.isneginf(got), np.isneginf(exp)), node.name  # -inf exactly where hidden


@pytest.mark.parametrize("w", [6, 7, 100])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_window_as_wide_as_the_text_is_the_causal_lesson_bit_for_bit(w: int, dtype: str) -> None:
    win = tracer.trace_lesson("window", window=w, dtype=dtype)
    causal = tracer.trace_lesson("causal", dtype=dtype)
    same = ["x", "W_query", "W_key", "W_value", "q", "q.p", "q.s", "k", "v", "v.s", "omega", "omega.p", "omega.s"]
    same += ["sqrt_dk", "neg.omega", "neg.scaled"]
    pairs = [(n, n) for n in same] + [(f"window.{n}", f"causal.{n}") for n in ("max", "shift", "exp", "sum", "alpha")]
    pairs += [("mask.hide", "mask.triu"), ("window.alpha_sum", "causal.alpha_sum")]
    for a, b in pairs:
        assert np.array_equal(win.tensor(a), causal.tensor(b)), (a, b)
    assert not win.tensor("mask.far").any()
    assert not win.tensor("diff.alpha").any() and float(win["check.causal"].value) == 0.0
    assert np.array_equal(win.tensor("z"), win.tensor("causal.z"))


def test_rows_the_window_reaches_back_to_the_start_are_causal_exactly() -> None:
    t = tracer.trace_lesson("window")  # w = 3 on six tokens
    diff = t.tensor("diff.alpha")
    assert not diff[:3].any() and all(diff[i].any() for i in range(3, 6))
    assert [int((t.tensor("mask.hide")[i] == 0).sum()) for i in range(6)] == [1, 2, 3, 3, 3, 3]
    assert float(t["check.causal"].value) > 0.01
    assert t.meta["window"] == 3 and t.meta["lesson"] == "window"


def test_a_longer_text_keeps_each_query_to_w_keys() -> None:
    x = np.random.default_rng(1).normal(size=(40, 3))
    t = tracer.trace_lesson("window", inputs=x, window=5)
    alpha = t.tensor("window.alpha")
    assert [int((row > 0).sum()) for row in alpha] == [min(i + 1, 5) for i in range(40)]


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, "3"])
def test_a_window_that_is_not_a_positive_whole_number_is_refused(bad: object) -> None:
    with pytest.raises(InputError, match="window must be a whole number"):
        tracer.trace_lesson("window", window=bad)


def test_the_cli_takes_the_window_and_refuses_a_bad_one(tmp_path: Path) -> None:
    out = tmp_path / "w.json"
    ok = CliRunner().invoke(app, ["trace", "--lesson", "window", "--window", "6", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert tracer.load(out).meta["window"] == 6
    bad = CliRunner().invoke(app, ["trace", "--lesson", "window", "--window", "0", "-o", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "--window must be a whole number" in bad.output
    assert "Traceback" not in bad.output and not (tmp_path / "x.json").exists()
    other = CliRunner().invoke(app, ["trace", "--lesson", "causal", "--window", "3"])
    assert other.exit_code == 2 and "takes no option window" in other.output


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_committed_reports_are_current(lang: str) -> None:
    compare(ROOT / "reports" / "window" / lang, report.build(tracer.trace_lesson("window"), lang))


def test_narratives_agree_and_name_real_nodes() -> None:
    en, zh = narrative.load("window", "en"), narrative.load("window", "zh")
    assert {n: s.lists() for n, s in en.stages.items()} == {n: s.lists() for n, s in zh.stages.items()}
    assert {n: (x.formula, x.row) for n, x in en.nodes.items()} == {n: (x.formula, x.row) for n, x in zh.nodes.items()}
    t = tracer.trace_lesson("window")
    assert list(en.stages) == list(t.stages)
    for story in (en, zh):
        for st in story.stages.values():
            for name in [*(st.show or ()), *st.heatmap, *st.bars]:
                t.node(name)
                assert story.node(name).caption, name
            for name in [*st.heatmap, *st.bars]:
                assert story.node(name).figure and story.node(name).alt, name
