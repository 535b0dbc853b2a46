"""Lesson ``kvcache``: every traced tensor against a generation loop written here, and the page's equalities.

The reference below is what a textbook would write: the weights drawn as the
book draws them, a loop that feeds the prompt and then one token at a time,
keys and values appended to the cache with ``torch.cat``, the causal mask
sliced at the new tokens' positions (``mask[a-1:b, :b]``).  It shares no
code with the pipeline.
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


def _project(out: dict[str, torch.Tensor], pre: str, x: torch.Tensor, w: dict[str, torch.Tensor]) -> None:
    for name, wm in w.items():
        prods = x[:, :, None] * wm[None, :, :]  # [i, k, c]
        out[f"{pre}{name}.p"] = prods.permute(0, 2, 1)  # [i, c, k]
        out[f"{pre}{name}.s"] = prods.cumsum(dim=1).permute(0, 2, 1)
        out[f"{pre}{name}"] = out[f"{pre}{name}.s"][..., -1]


def _attend(out: dict[str, torch.Tensor], pre: str, hidden: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Scores of ``out[pre + 'q']`` against ``k``, masked where ``hidden``, scaled, softmaxed, weighing ``v``."""
    q, dt = out[f"{pre}q"], k.dtype
    prods = q[:, None, :] * k[None, :, :]  # [i, j, c]
    out[f"{pre}omega.p"], out[f"{pre}omega.s"] = prods, prods.cumsum(dim=-1)
    omega = out[f"{pre}omega"] = prods.sum(dim=-1)
    neg = torch.where(hidden > 0, torch.tensor(-torch.inf, dtype=dt), omega)
    scaled = neg / torch.tensor(float(k.shape[1]) ** 0.5, dtype=dt)
    m = scaled.max(dim=-1).values
    e = torch.exp(scaled - m[:, None])
    alpha = e / e.sum(dim=-1, keepdim=True)
    s = f"{pre}causal."
    out.update({f"{pre}neg.omega": neg, f"{pre}neg.scaled": scaled, f"{s}max": m, f"{s}shift": scaled - m[:, None]})
    out.update({f"{s}exp": e, f"{s}sum.s": e.cumsum(dim=-1), f"{s}sum": e.sum(dim=-1), f"{s}alpha": alpha})
    out.update({f"{s}alpha_sum.s": alpha.cumsum(dim=-1), f"{s}alpha_sum": alpha.sum(dim=-1)})
    terms = alpha[:, :, None] * v[None, :, :]  # [i, j, c]
    out[f"{pre}z.t"], out[f"{pre}z.s"], out[f"{pre}z"] = terms, terms.cumsum(dim=1), terms.sum(dim=1)


def textbook(x: torch.Tensor, prompt: int, d_out: int = 2) -> dict[str, torch.Tensor]:
    """Generation with a KV cache the plain way, in ``x``'s dtype; keys are the trace's node names."""
    dt, (t, d_in) = x.dtype, x.shape
    torch.manual_seed(789)
    layers = [torch.nn.Linear(d_in, d_out, bias=False) for _ in range(3)]
    wq, wk, wv = (layer.weight.detach().T.to(dt) for layer in layers)
    w = {"q": wq, "k": wk, "v": wv}
    out: dict[str, torch.Tensor] = {"x": x, "W_query": wq, "W_key": wk, "W_value": wv}
    out["sqrt_dk"] = out["full.sqrt_dk"] = torch.tensor(float(d_out) ** 0.5, dtype=dt)
    causal = torch.triu(torch.ones(t, t, dtype=dt), diagonal=1)  # 1 where key j comes after query i
    k_cache = torch.zeros(0, d_out, dtype=dt)
    v_cache = torch.zeros(0, d_out, dtype=dt)
    spans = [(0, prompt)] + [(n, n + 1) for n in range(prompt, t)]  # 0-based [start, stop)
    rows = torch.zeros(len(spans), t, dtype=dt)
    for s, (a, b) in enumerate(spans, start=1):
        pre = f"step{s}."
        out[f"{pre}x"] = x[a:b]
        _project(out, pre, x[a:b], w)
        k_cache = torch.cat((k_cache, out[f"{pre}k"]))
        v_cache = torch.cat((v_cache, out[f"{pre}v"]))
        out[f"{pre}cache.k"], out[f"{pre}cache.v"] = k_cache, v_cache
        out[f"{pre}mask"] = causal[a:b, :b]
        _attend(out, pre, causal[a:b, :b], k_cache, v_cache)
        rows[s - 1, :b] = 1
    out["gen.z"] = torch.cat([out[f"step{s}.z"] for s in range(1, len(spans) + 1)])
    out["cache.rows"] = rows
    out["mask.triu"], out["mask.tril"] = causal, 1 - causal
    _project(out, "full.", x, w)
    _attend(out, "full.", causal, out["full.k"], out["full.v"])
    out["check.full"] = (out["gen.z"] - out["full.z"]).abs().max()
    cached = [3 * (b - a) * d_in * d_out + 2 * (b - a) * b * d_out for a, b in spans]
    full = [3 * b * d_in * d_out + 2 * b * b * d_out for _, b in spans]
    out["cost.step.cached"], out["cost.step.full"] = torch.tensor(cached, dtype=dt), torch.tensor(full, dtype=dt)
    out["cost.cached"], out["cost.full"] = torch.tensor(sum(cached), dtype=dt), torch.tensor(sum(full), dtype=dt)
    out["cost.ratio"] = out["cost.full"] / out["cost.cached"]
    out["cache.values"] = torch.tensor(2 * 1 * d_out, dtype=dt)
    out["cache.bytes"] = torch.tensor(2 * 1 * d_out * (4 if dt == torch.float32 else 8), dtype=dt)
    return out


CASES = [(TUTORIAL, 3, "float32"), (TUTORIAL, 1, "float64"), (TUTORIAL, 5, "float32"), (None, 4, "float64")]


@pytest.mark.parametrize(("rows", "prompt", "dtype"), CASES)
def test_every_traced_tensor_is_the_textbook_value(rows: list[list[float]] | None, prompt: int, dtype: str) -> None:
    data = rows if rows is not None else np.random.default_rng(5).normal(size=(9, 4))
    x = torch.tensor(data, dtype=getattr(torch, dtype))
    t = tracer.trace_lesson("kvcache", inputs=x.numpy(), prompt=prompt, dtype=dtype)
    want = textbook(x, prompt)
    names = [n.name for n in t.nodes]
    assert sorted(names) == sorted(want), set(names) ^ set(want)  # every node is compared, none is missing
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-14}
    for node in t.nodes:
        got = np.asarray(node.value, dtype=np.float64)
        exp = want[node.name].to(torch.float64).numpy()
        assert got.shape == exp.shape, node.name
        assert np.allclose(got, exp, equal_nan=True, **tol), node.name
        assert np.array_equal(np.isneginf(got), np.isneginf(exp)), node.name  # -inf exactly where hidden
    assert t.verify().ok


@pytest.mark.parametrize("prompt", [1, 3, 5])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_step_s_context_is_the_full_causal_row_bit_for_bit(prompt: int, dtype: str) -> None:
    t = tracer.trace_lesson("kvcache", prompt=prompt, dtype=dtype)
    full = t.tensor("full.z")
    row = 0
    for s, (a, b) in enumerate(t.meta["steps"], start=1):
        z = t.tensor(f"step{s}.z")
        assert z.shape[0] == b - a + 1 and a == row + 1
        assert torch.equal(torch.tensor(z), torch.tensor(full[a - 1 : b])), s
        row = b
    assert row == 6 and float(t["check.full"].value) == 0.0
    assert np.array_equal(t.tensor("gen.z"), full)


def test_the_full_attention_is_the_causal_lesson_and_the_window_lesson_s_rows() -> None:
    kv, causal = tracer.trace_lesson("kvcache"), tracer.trace_lesson("causal")
    pairs = [(f"full.{n}", n) for n in ("q", "k", "v", "omega", "neg.omega", "neg.scaled", "causal.alpha")]
    pairs += [("mask.triu", "mask.triu"), ("sqrt_dk", "sqrt_dk")]
    for a, b in pairs:
        assert np.array_equal(kv.tensor(a), causal.tensor(b)), (a, b)
    window = tracer.trace_lesson("window")  # its causal.z: the causal lesson's weights times its values
    assert np.array_equal(kv.tensor("gen.z"), window.tensor("causal.z"))


def test_the_cached_products_are_the_products_the_trace_holds() -> None:
    """The count on the page is the number of multiplications recorded, step by step (not a formula alone)."""
    t = tracer.trace_lesson("kvcache")
    cached, full = t.tensor("cost.step.cached"), t.tensor("cost.step.full")
    for s in range(1, len(t.meta["steps"]) + 1):
        held = sum(t.tensor(f"step{s}.{n}").size for n in ("q.p", "k.p", "v.p", "omega.p", "z.t"))
        assert cached[s - 1] == held
    last = sum(t.tensor(f"full.{n}").size for n in ("q.p", "k.p", "v.p", "omega.p", "z.t"))
    assert full[-1] == last  # without a cache the last step is the full attention
    assert cached.tolist() == [90, 34, 38, 42] and full.tolist() == [90, 136, 190, 252]
    assert float(t["cost.cached"].value) == 204 and float(t["cost.full"].value) == 668
    assert t.meta["products"] == {"cached": [90, 34, 38, 42], "full": [90, 136, 190, 252], "bytes_per_token": 16}


def test_the_cache_size_per_token_is_two_layers_d_out_bytes() -> None:
    t = tracer.trace_lesson("kvcache")
    assert float(t["cache.values"].value) == 2 * 1 * 2 and float(t["cache.bytes"].value) == 2 * 1 * 2 * 4
    wide = tracer.trace_lesson("kvcache", d_out=8, dtype="float64")
    assert float(wide["cache.bytes"].value) == 2 * 1 * 8 * 8
    rows = t.tensor("cache.rows")
    assert rows.sum(axis=1).tolist() == [3, 4, 5, 6]  # the cache after each step: one more token each time
    assert t.tensor("step4.cache.k").shape == (6, 2) and t.tensor("step1.cache.v").shape == (3, 2)


def test_each_one_token_step_hides_nothing_and_the_prompt_is_causal() -> None:
    t = tracer.trace_lesson("kvcache")
    assert np.array_equal(t.tensor("step1.mask"), np.triu(np.ones((3, 3)), 1))
    for s in (2, 3, 4):
        assert not t.tensor(f"step{s}.mask").any() and t.tensor(f"step{s}.omega").shape == (1, s + 2)


@pytest.mark.parametrize("bad", [0, -1, 6, 9, 2.5, True, "3"])
def test_a_prompt_that_leaves_nothing_to_generate_or_is_not_a_count_is_refused(bad: object) -> None:
    with pytest.raises(InputError, match="prompt must"):
        tracer.trace_lesson("kvcache", prompt=bad)


def test_a_short_text_gets_a_shorter_default_prompt_and_one_token_is_refused() -> None:
    t = tracer.trace_lesson("kvcache", inputs=np.array([[0.1, 0.2], [0.3, 0.4]]))
    assert t.meta["steps"] == [[1, 1], [2, 2]] and float(t["check.full"].value) == 0.0
    with pytest.raises(InputError, match="needs at least two tokens"):
        tracer.trace_lesson("kvcache", inputs=np.array([[0.1, 0.2]]))


def test_the_cli_takes_the_prompt_and_refuses_a_bad_one(tmp_path: Path) -> None:
    out = tmp_path / "kv.json"
    ok = CliRunner().invoke(app, ["trace", "--lesson", "kvcache", "--prompt", "2", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert tracer.load(out).meta["steps"] == [[1, 2], [3, 3], [4, 4], [5, 5], [6, 6]]
    bad = CliRunner().invoke(app, ["trace", "--lesson", "kvcache", "--prompt", "6", "-o", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "--prompt must leave a token to generate" in bad.output
    assert "Traceback" not in bad.output and not (tmp_path / "x.json").exists()
    other = CliRunner().invoke(app, ["trace", "--lesson", "causal", "--prompt", "3"])
    assert other.exit_code == 2 and "takes no option prompt" in other.output


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_committed_reports_are_current(lang: str) -> None:
    compare(ROOT / "reports" / "kvcache" / lang, report.build(tracer.trace_lesson("kvcache"), lang))


def test_narratives_agree_and_name_real_nodes() -> None:
    en, zh = narrative.load("kvcache", "en"), narrative.load("kvcache", "zh")
    assert {n: s.lists() for n, s in en.stages.items()} == {n: s.lists() for n, s in zh.stages.items()}
    assert {n: (x.formula, x.row) for n, x in en.nodes.items()} == {n: (x.formula, x.row) for n, x in zh.nodes.items()}
    t = tracer.trace_lesson("kvcache", backward=True)  # the narrative tells some backward stages too
    assert list(en.stages) == [s for s in t.stages if s in en.stages]
    assert set(tracer.trace_lesson("kvcache").stages) <= set(en.stages)
    for story in (en, zh):
        for st in story.stages.values():
            for name in [*(st.show or ()), *st.heatmap, *st.bars]:
                t.node(name)
                assert story.node(name).caption, name
            for name in [*st.heatmap, *st.bars]:
                assert story.node(name).figure and story.node(name).alt, name


def test_the_collector_paused_for_the_steps_runs_again_after_them() -> None:
    import gc

    assert gc.isenabled()
    tracer.trace_lesson("kvcache")
    assert gc.isenabled()
    with pytest.raises(InputError):
        tracer.trace_lesson("kvcache", prompt=0)
    assert gc.isenabled()
