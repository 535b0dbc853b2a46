"""Lesson ``flash``: every traced tensor against plain PyTorch written here, and the online softmax's equalities.

The reference below is what a textbook would write: the weights drawn as the
book draws them, the keys cut into blocks with ``torch.cat`` and ``reshape``,
the mask from its definition (key ``(u-1)·B + j`` is hidden from query i
when it comes after i), and FlashAttention's loop as a Python loop over the
blocks, one block after the other.  It shares no code with the pipeline.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import tracer
from tests.gold import compare
from tracer.cli import app
from tracer.core import exact
from tracer.errors import InputError
from tracer.present import narrative, report

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.22, 0.58, 0.33], [0.77, 0.25, 0.10]]
TUTORIAL.append([0.05, 0.80, 0.55])


def _loop(s: torch.Tensor, vb: torch.Tensor, order: list[int], pre: str) -> dict[str, torch.Tensor]:
    """FlashAttention's loop over the blocks in ``order``, every row at once, as the papers write it."""
    t, n, b = s.shape
    dt = s.dtype
    out: dict[str, torch.Tensor] = {}
    m_all, c_all = torch.zeros(t, n, dtype=dt), torch.zeros(t, n, dtype=dt)
    dm_all, l_all, r_all = (torch.zeros(t, n, dtype=dt) for _ in range(3))
    o_all, pv_all = (torch.zeros(t, n, vb.shape[-1], dtype=dt) for _ in range(2))
    shift_all, p_all = torch.zeros(t, n, b, dtype=dt), torch.zeros(t, n, b, dtype=dt)
    m = torch.full((t,), -math.inf, dtype=dt)
    ell = torch.zeros(t, dtype=dt)
    o = torch.zeros(t, vb.shape[-1], dtype=dt)
    for u in order:
        m_new = torch.maximum(m, s[:, u].max(dim=1).values)
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # no key seen yet (reverse)
        p = torch.exp(s[:, u] - safe[:, None])
        c = torch.exp(m - safe)
        r = p.sum(dim=1)
        pv = p @ vb[u]
        m_all[:, u], dm_all[:, u], c_all[:, u], r_all[:, u] = m_new, m - safe, c, r
        shift_all[:, u], p_all[:, u], pv_all[:, u] = s[:, u] - safe[:, None], p, pv
        ell, o, m = ell * c + r, o * c[:, None] + pv, m_new
        l_all[:, u], o_all[:, u] = ell, o
    terms = p_all[..., None] * vb[None]  # [i, u, j, c]
    out.update({f"{pre}bmax": s.max(dim=2).values, f"{pre}m": m_all, f"{pre}shift": shift_all, f"{pre}p": p_all})
    out.update({f"{pre}rowsum.s": p_all.cumsum(dim=2), f"{pre}rowsum": r_all, f"{pre}dm": dm_all, f"{pre}c": c_all})
    out.update({f"{pre}pv.t": terms, f"{pre}pv.s": terms.cumsum(dim=2), f"{pre}pv": pv_all})
    out.update({f"{pre}l": l_all, f"{pre}o": o_all})
    out[f"{pre}z"] = o / ell[:, None]
    return out


def textbook(x: torch.Tensor, block: int, d_out: int = 2) -> dict[str, torch.Tensor]:
    """The lesson the plain way, in ``x``'s dtype; keys are the trace's node names."""
    dt, (t, d_in) = x.dtype, x.shape
    torch.manual_seed(789)
    layers = [torch.nn.Linear(d_in, d_out, bias=False) for _ in range(3)]
    wq, wk, wv = (layer.weight.detach().T.to(dt) for layer in layers)
    out: dict[str, torch.Tensor] = {"x": x, "W_query": wq, "W_key": wk, "W_value": wv}
    for name, wm in (("q", wq), ("k", wk), ("v", wv)):
        prods = x[:, :, None] * wm[None, :, :]  # [i, k, c]
        out[f"{name}.p"], out[f"{name}.s"] = prods.permute(0, 2, 1), prods.cumsum(dim=1).permute(0, 2, 1)
        out[name] = out[f"{name}.s"][..., -1]
    q, k, v = out["q"], out["k"], out["v"]
    n = -(-t // block)
    pad = torch.zeros(n * block - t, d_out, dtype=dt)
    if len(pad):
        out["flash.pad"] = pad
    kb, vb = torch.cat((k, pad)).reshape(n, block, d_out), torch.cat((v, pad)).reshape(n, block, d_out)
    out["flash.k"], out["flash.v"] = kb, vb
    root = out["sqrt_dk"] = torch.tensor(float(d_out) ** 0.5, dtype=dt)
    hide = torch.zeros(t, n, block, dtype=dt)
    for i in range(t):
        for u in range(n):
            for j in range(block):
                hide[i, u, j] = 1.0 if u * block + j > i else 0.0  # 0-based: key u·B + j after query i
    out["flash.hide"] = hide
    prods = q[:, None, None, :] * kb[None]  # [i, u, j, c]
    out["flash.omega.p"], out["flash.omega.s"] = prods, prods.cumsum(dim=-1)
    out["flash.omega"] = prods.cumsum(dim=-1)[..., -1]
    out["flash.neg"] = torch.where(hide > 0, torch.tensor(-math.inf, dtype=dt), out["flash.omega"])
    s = out["flash.s"] = out["flash.neg"] / root
    out.update(_loop(s, vb, list(range(n)), "flash."))
    back = _loop(s, vb, list(range(n - 1, -1, -1)), "rev.")
    out.update(back)
    out["rev.none"] = torch.isinf(back["rev.m"]).to(dt)
    out["rev.msafe"] = torch.where(torch.isinf(back["rev.m"]), torch.zeros_like(back["rev.m"]), back["rev.m"])
    prods = q[:, None, :] * k[None, :, :]  # [i, j, c]
    out["omega.p"], out["omega.s"] = prods, prods.cumsum(dim=-1)
    omega = out["omega"] = prods.sum(dim=-1)
    tril = torch.tril(torch.ones(t, t, dtype=dt))
    out["mask.tril"], out["mask.triu"] = tril, 1 - tril
    neg = out["neg.omega"] = torch.where(tril == 0, torch.tensor(-math.inf, dtype=dt), omega)
    scaled = out["neg.scaled"] = neg / root
    mx = out["causal.max"] = scaled.max(dim=-1).values
    e = out["causal.exp"] = torch.exp(scaled - mx[:, None])
    out["causal.shift"], out["causal.sum.s"], out["causal.sum"] = scaled - mx[:, None], e.cumsum(-1), e.sum(-1)
    alpha = out["causal.alpha"] = e / e.sum(dim=-1, keepdim=True)
    out["causal.alpha_sum.s"], out["causal.alpha_sum"] = alpha.cumsum(-1), alpha.sum(-1)
    terms = alpha[:, :, None] * v[None, :, :]
    out["causal.z.t"], out["causal.z.s"], out["causal.z"] = terms, terms.cumsum(dim=1), terms.sum(dim=1)
    out["diff.z"] = out["flash.z"] - out["causal.z"]
    out["check.flash"] = (out["flash.z"] - out["causal.z"]).abs().max()
    out["check.rev"] = (out["rev.z"] - out["causal.z"]).abs().max()
    return out


def _random(rows: int, cols: int, seed: int) -> list[list[float]]:
    return np.random.default_rng(seed).normal(size=(rows, cols)).tolist()


CASES = [(TUTORIAL, 2, "float32"), (TUTORIAL, 4, "float32"), (TUTORIAL, 1, "float64"), (TUTORIAL, 6, "float32")]
CASES += [(_random(9, 4, 5), 4, "float64"), (_random(7, 3, 2), 3, "float32")]


@pytest.mark.parametrize(("rows", "block", "dtype"), CASES)
def test_every_traced_tensor_is_the_textbook_value(rows: list[list[float]], block: int, dtype: str) -> None:
    x = torch.tensor(rows, dtype=getattr(torch, dtype))
    t = tracer.trace_lesson("flash", inputs=x.numpy(), block=block, dtype=dtype)
    want = textbook(x, block)
    names = [n.name for n in t.nodes]
    assert sorted(names) == sorted(want), set(names) ^ set(want)  # every node is compared, none is missing
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-14}
    for node in t.nodes:
        got = np.asarray(node.value, dtype=np.float64)
        exp = want[node.name].to(torch.float64).numpy()
        assert got.shape == exp.shape, node.name
        assert np.allclose(got, exp, equal_nan=True, **tol), node.name
        assert np.array_equal(np.isneginf(got), np.isneginf(exp)), node.name  # -inf exactly where hidden
    assert t.meta["block"] == block and t.meta["blocks"] == -(-len(rows) // block)


@pytest.mark.parametrize("block", [1, 2, 3, 4, 5, 6, 7, 50])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_online_softmax_is_the_ordinary_one_within_the_bound_the_trace_states(block: int, dtype: str) -> None:
    for rows in (TUTORIAL, _random(23, 5, block)):
        x = np.asarray(rows) * 3  # wider spreads than the tutorial's, so the bound's e^(u·S) term counts
        t = tracer.trace_lesson("flash", inputs=x, block=block, dtype=dtype)
        for check in ("check.flash", "check.rev"):
            bound = t.node(check).attrs["bound"]
            assert 0 <= float(t[check].value) <= bound < (1e-4 if dtype == "float32" else 1e-12), (check, bound)
        assert np.abs(t.tensor("diff.z")).max() == float(t["check.flash"].value)
        assert t.verify().ok  # a bounded check follows, and so does every value verify can recompute


def test_the_bound_is_met_by_the_exact_value_too() -> None:
    """Each form is within its share of the bound of the exact (float64 from the same float32 scores) context."""
    t = tracer.trace_lesson("flash", inputs=np.asarray(_random(40, 3, 7)) * 4, block=3)
    s = t.tensor("neg.scaled").astype(np.float64)
    v = t.tensor("v").astype(np.float64)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    z = (e / e.sum(axis=1, keepdims=True)) @ v
    bound = t.node("check.flash").attrs["bound"]
    assert np.abs(t.tensor("flash.z") - z).max() <= bound and np.abs(t.tensor("causal.z") - z).max() <= bound


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_block_as_wide_as_the_text_is_the_ordinary_softmax_up_to_the_last_division(dtype: str) -> None:
    """B = T: max, shift, exponentials and sum are the ordinary softmax's bit for bit; the context is not.

    The ordinary form divides every exponential by the sum, then adds the
    weighted values; the online form adds the exponential-weighted values,
    then divides once.  Same maths, a different rounding.
    """
    t = tracer.trace_lesson("flash", block=6, dtype=dtype)
    pairs = [("flash.omega", "omega"), ("flash.s", "neg.scaled"), ("flash.shift", "causal.shift")]
    pairs += [("flash.p", "causal.exp"), ("flash.rowsum.s", "causal.sum.s")]
    for a, b in pairs:
        assert np.array_equal(t.tensor(a)[:, 0], t.tensor(b)), (a, b)
    for a, b in (("flash.m", "causal.max"), ("flash.l", "causal.sum"), ("flash.rowsum", "causal.sum")):
        assert np.array_equal(t.tensor(a)[:, 0], t.tensor(b)), (a, b)
    assert not t.tensor("flash.c").any()  # c = e^(-inf) = 0: nothing before
    p, v = t.tensor("flash.p")[:, 0], t.tensor("v")
    terms = (p[:, :, None] * v[None]).astype(p.dtype)
    deferred = np.cumsum(terms, axis=1, dtype=p.dtype)[:, -1] / t.tensor("flash.l")[:, :1]
    assert np.array_equal(t.tensor("flash.z"), deferred)  # the one division at the end
    assert not np.array_equal(t.tensor("flash.z"), t.tensor("causal.z"))  # on the tutorial: a few last bits differ
    assert float(t["check.flash"].value) <= t.node("check.flash").attrs["bound"]


def test_the_default_blocks_and_what_the_running_max_does() -> None:
    t = tracer.trace_lesson("flash")  # B = 2: three blocks on six tokens
    assert t.meta["block"] == 2 and t.meta["blocks"] == 3 and "flash.pad" not in {n.name for n in t.nodes}
    m, c = t.tensor("flash.m"), t.tensor("flash.c")
    assert (c[:, 0] == 0).all()  # before the first block m = -inf: e^(-inf) = 0
    # with the causal lesson's weights key 1 has every row's largest score: forward, m is set by block 1
    assert (m == m[:, :1]).all() and (c[:, 1:] == 1).all()
    after = t.tensor("flash.hide").all(axis=2)  # blocks after the diagonal: nothing seen, nothing changes
    assert after.sum() == 6 and (t.tensor("flash.rowsum")[after] == 0).all() and (c[after] == 1).all()
    rm, rc = t.tensor("rev.m"), t.tensor("rev.c")  # from the diagonal back the max rises: row 5 twice
    assert rm[4, 2] < rm[4, 1] < rm[4, 0] and 0 < rc[4, 0] < rc[4, 1] < 1
    assert all((np.diff(rm[i][np.isfinite(rm[i])][::-1]) >= 0).all() for i in range(6))
    assert np.isfinite(t.tensor("rev.z")).all() and (t.tensor("rev.none") == after).all()


def test_a_last_block_shorter_than_b_keeps_every_key() -> None:
    t = tracer.trace_lesson("flash", block=4)  # blocks 1-4 and 5-6
    assert t.meta["blocks"] == 2 and t.tensor("flash.pad").shape == (2, 2)
    assert np.isneginf(t.tensor("flash.s")[:, 1, 2:]).all()  # keys 7 and 8 do not exist: hidden
    assert float(t["check.flash"].value) <= t.node("check.flash").attrs["bound"]


def test_every_exponential_is_exact_and_almost_none_takes_the_slow_path() -> None:
    x = np.random.default_rng(3).normal(size=(512, 3))
    with exact.counting() as tally:
        t = tracer.trace_lesson("flash", inputs=x)
    n = 256  # blocks of 2
    assert tally.entries >= 2 * (512 * n * 2 + 512 * n) + 512 * 512  # flash.p, flash.c, rev.*, causal.exp
    assert tally.slow <= 16, tally.slow  # 12 of 1,048,576 entries on this input
    assert float(t["check.flash"].value) <= t.node("check.flash").attrs["bound"]


def test_verify_recomputes_every_value_and_names_an_edited_running_sum() -> None:
    t = tracer.trace_lesson("flash", block=4)
    result = t.verify()
    assert result.ok and not result.wrong and result.unchecked == ()  # the running quantities too
    nodes = []
    for node in tracer.trace_lesson("flash").nodes:
        if node.name in ("flash.l", "rev.m"):
            value = node.value.copy()
            value[4, 1] += 0.5  # flash.l[5,2], rev.m[5,2]
            node = dataclasses.replace(node, value=value)
        nodes.append(node)
    edited = tracer.Trace(nodes, t.meta).verify()
    named = {w.node: w.ids for w in edited.wrong}
    # the edited entry, and the next block's, which was computed from the value before the edit
    assert named["flash.l"] == ("flash.l[5,2]", "flash.l[5,3]") and "flash.z" not in named
    assert named["rev.m"] == ("rev.m[5,1]", "rev.m[5,2]") and named["rev.msafe"] == ("rev.msafe[5,2]",)


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, "3"])
def test_a_block_size_that_is_not_a_positive_whole_number_is_refused(bad: object) -> None:
    with pytest.raises(InputError, match="block must be a whole number"):
        tracer.trace_lesson("flash", block=bad)


def test_the_cli_takes_the_block_size_and_refuses_a_bad_one(tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    ok = CliRunner().invoke(app, ["trace", "--lesson", "flash", "--block", "4", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert tracer.load(out).meta["block"] == 4
    bad = CliRunner().invoke(app, ["trace", "--lesson", "flash", "--block", "0", "-o", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "--block must be a whole number" in bad.output
    assert "Traceback" not in bad.output and not (tmp_path / "x.json").exists()
    other = CliRunner().invoke(app, ["trace", "--lesson", "causal", "--block", "3"])
    assert other.exit_code == 2 and "takes no option block" in other.output


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_committed_reports_are_current(lang: str) -> None:
    compare(ROOT / "reports" / "flash" / lang, report.build(tracer.trace_lesson("flash"), lang))


def test_narratives_agree_and_name_real_nodes() -> None:
    en, zh = narrative.load("flash", "en"), narrative.load("flash", "zh")
    assert {n: s.lists() for n, s in en.stages.items()} == {n: s.lists() for n, s in zh.stages.items()}
    assert {n: (x.formula, x.row) for n, x in en.nodes.items()} == {n: (x.formula, x.row) for n, x in zh.nodes.items()}
    t = tracer.trace_lesson("flash")
    assert list(en.stages) == list(t.stages)
    for story in (en, zh):
        for st in story.stages.values():
            for name in [*(st.show or ()), *st.heatmap, *st.bars]:
                t.node(name)
                assert story.node(name).caption, name
            for name in [*st.heatmap, *st.bars]:
                assert story.node(name).figure and story.node(name).alt, name


def test_explain_writes_the_rescale_with_its_numbers() -> None:
    out = CliRunner().invoke(app, ["explain", "flash.l[5,2]", "--lesson", "flash"])
    assert out.exit_code == 0, out.output
    assert "flash.l[5,1] × flash.c[5,2] + flash.rowsum[5,2]" in out.output and "= 3.6915" in out.output
    back = CliRunner().invoke(app, ["explain", "rev.m[5,1]", "--lesson", "flash"])
    assert "max(0.0624, 0.1544) = 0.1544" in back.output, back.output
