"""Lesson ``rope``: every traced tensor against rotary embeddings written here in plain PyTorch, and the equalities.

The reference is RoPE as today's code writes it: Hugging Face's
``rotate_half`` with ``cos``/``sin`` tables repeated over both halves, and
Meta's complex-number form (``torch.polar``, ``torch.view_as_complex``) for
the interleaved pairs.  It shares no code with the pipeline (torch's own
``cos``, ``sin`` and powers, not the correctly rounded ones, hence a
tolerance).  Then what the page proves: a score depends only on ``m − n``
(shifted positions, within the derived bound, for several offsets and
sizes), the two conventions differ, and permuting the projections' columns
maps one onto the other exactly.
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
from tracer.core import exact, trig
from tracer.errors import InputError
from tracer.present import narrative, report

ROOT = Path(__file__).resolve().parent.parent


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_half(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    d = x.shape[-1]
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=x.dtype) / d)
    ang = pos.to(x.dtype)[:, None] * theta[None, :]
    cos, sin = torch.cat((ang.cos(), ang.cos()), -1), torch.cat((ang.sin(), ang.sin()), -1)
    return x * cos + rotate_half(x) * sin


def rope_complex(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    d = x.shape[-1]
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=x.dtype) / d)
    ang = pos.to(x.dtype)[:, None] * theta[None, :]
    z = torch.view_as_complex(x.reshape(x.shape[0], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(ang), ang)).flatten(1)


def _pairs(out: dict[str, torch.Tensor], pre: str, v: torch.Tensor, ang: torch.Tensor, style: str) -> None:
    """The pair members, their products with cos and sin, and the rotated members and vector."""
    h = v.shape[1] // 2
    x, y = (v[:, :h], v[:, h:]) if style == "half" else (v[:, 0::2], v[:, 1::2])
    c, s = ang.cos(), ang.sin()
    out.update({f"{pre}.x": x, f"{pre}.y": y, f"{pre}.xcos": x * c, f"{pre}.ysin": y * s})
    out.update({f"{pre}.ycos": y * c, f"{pre}.xsin": x * s, f"{pre}.rx": x * c - y * s, f"{pre}.ry": y * c + x * s})
    turned = rope_half(v, out["rope.pos"] if not pre.startswith("shift") else out["shift.pos"], BASE)
    out[pre] = turned if style == "half" else rope_complex(v, out["rope.pos"], BASE)


def _parts(out: dict[str, torch.Tensor], name: str, products: torch.Tensor) -> None:
    out[f"{name}.p"], out[f"{name}.s"], out[name] = products, products.cumsum(-1), products.sum(-1)


BASE = 10000.0


def textbook(x: torch.Tensor, d_out: int, offset: int) -> dict[str, torch.Tensor]:
    """Every quantity of the lesson, by the book (the trace's layouts: a summed axis last)."""
    dt, t = x.dtype, x.shape[0]
    torch.manual_seed(123)
    w = {n: torch.rand(x.shape[1], d_out).to(dt) for n in ("W_query", "W_key", "W_value")}
    out: dict[str, torch.Tensor] = {"x": x, **w}
    for n, wn in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
        _parts(out, n, x[:, None, :] * w[wn].T[None])
    pos = torch.arange(t)
    theta = 1.0 / BASE ** (torch.arange(0, d_out, 2, dtype=dt) / d_out)
    out.update({"rope.pos": pos.to(dt), "rope.theta": theta})
    ang = pos.to(dt)[:, None] * theta[None, :]
    out.update({"rope.angle": ang, "rope.cos": ang.cos(), "rope.sin": ang.sin()})
    for n in ("q", "k"):
        _pairs(out, f"rope.{n}", out[n], ang, "half")
    rq, rk = out["rope.q"], out["rope.k"]
    _parts(out, "omega", rq[:, None, :] * rk[None, :, :])
    future = torch.triu(torch.ones(t, t), diagonal=1).bool()
    out.update({"sqrt_dk": torch.tensor(d_out**0.5, dtype=dt)})
    out.update({"mask.tril": (~future).to(dt), "mask.triu": future.to(dt)})
    neg = out["omega"].masked_fill(future, -torch.inf)
    scaled = neg / d_out**0.5
    m = scaled.max(-1).values
    e = torch.exp(scaled - m[:, None])
    alpha = torch.softmax(scaled, -1)
    out.update({"neg.omega": neg, "neg.scaled": scaled, "causal.max": m, "causal.shift": scaled - m[:, None]})
    out.update({"causal.exp": e, "causal.sum.s": e.cumsum(-1), "causal.sum": e.sum(-1), "causal.alpha": alpha})
    out.update({"causal.alpha_sum.s": alpha.cumsum(-1), "causal.alpha_sum": alpha.sum(-1)})
    terms = alpha[:, :, None] * out["v"][None, :, :]
    out.update({"z.t": terms, "z.s": terms.cumsum(1), "z": alpha @ out["v"]})
    moved = pos + offset
    out.update({"shift.offset": torch.tensor(float(offset)), "shift.pos": moved.to(dt)})
    s_ang = moved.to(dt)[:, None] * theta[None, :]
    out.update({"shift.angle": s_ang, "shift.cos": s_ang.cos(), "shift.sin": s_ang.sin()})
    for n in ("q", "k"):
        _pairs(out, f"shift.{n}", out[n], s_ang, "half")
    _parts(out, "shift.omega", out["shift.q"][:, None, :] * out["shift.k"][None, :, :])
    for n in ("q", "k"):
        _pairs(out, f"other.{n}", out[n], ang, "interleaved")
    _parts(out, "other.omega", out["other.q"][:, None, :] * out["other.k"][None, :, :])
    h = d_out // 2
    perm = torch.stack((torch.arange(h), torch.arange(h) + h), dim=1).flatten()
    back = torch.argsort(perm)
    for n, wn in (("q", "W_query"), ("k", "W_key")):
        out[f"perm.{wn}"] = w[wn][:, perm]
        _parts(out, f"perm.{n}", x[:, None, :] * w[wn][:, perm].T[None])
        _pairs(out, f"perm.r{n}", out[f"perm.{n}"], ang, "interleaved")
        out[f"perm.back.{n}"] = out[f"perm.r{n}"][:, back]
    _parts(out, "perm.omega", out["perm.rq"][:, None, :] * out["perm.rk"][None, :, :])
    out["check.shift"] = (out["shift.omega"] - out["omega"]).abs().max()
    out["check.other"] = (out["other.omega"] - out["omega"]).abs().max()
    out["check.perm"] = (out["perm.omega"] - out["omega"]).abs().max()
    out["check.perm.q"] = out["check.perm.k"] = torch.tensor(0.0)
    return out


CASES = [(4, 100, "float32"), (4, 7, "float64"), (8, 3, "float32"), (2, 1000, "float64")]


@pytest.mark.parametrize(("d_out", "offset", "dtype"), CASES)
def test_every_node_is_the_textbook_rope(d_out: int, offset: int, dtype: str) -> None:
    t = tracer.trace_lesson("rope", d_out=d_out, offset=offset, dtype=dtype)
    want = textbook(torch.tensor(t.tensor("x")), d_out, offset)
    names = [n.name for n in t.nodes]
    assert sorted(names) == sorted(want), set(names) ^ set(want)  # every node is compared, none is missing
    for node in t.nodes:
        got, exp = np.asarray(node.value, np.float64), want[node.name].to(torch.float64).numpy()
        # torch's cos and sin of angles near 1000 carry an absolute error of 1000 u; the checks are residuals
        tol = {"rtol": 1e-4, "atol": 2e-4} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-11}
        if node.name.startswith("check."):
            tol = {"rtol": 0.0, "atol": 1e-4 if dtype == "float32" else 1e-10}
            if node.name == "check.other":
                tol = {"rtol": 1e-4, "atol": 1e-4}
        assert got.shape == exp.shape and np.allclose(got, exp, equal_nan=True, **tol), node.name
    assert t.verify().ok


@pytest.mark.parametrize(("d_out", "offset", "dtype"), [*CASES, (16, 5000, "float32"), (6, -40, "float32")])
def test_a_score_depends_only_on_the_distance_within_the_bound(d_out: int, offset: int, dtype: str) -> None:
    t = tracer.trace_lesson("rope", d_out=d_out, offset=offset, dtype=dtype)
    check = t["check.shift"].node
    assert float(check.value) <= check.attrs["bound"]
    assert not np.array_equal(t.tensor("shift.q"), t.tensor("rope.q"))  # the vectors did move
    # the bound is no blanket epsilon: a query one position off moves the scores far beyond it
    q, k, pos = torch.tensor(t.tensor("q")), torch.tensor(t.tensor("k")), torch.arange(6)
    off_by_one = rope_half(q, pos + 1, BASE) @ rope_half(k, pos, BASE).T
    assert (off_by_one - torch.tensor(t.tensor("omega"))).abs().max() > 10 * check.attrs["bound"]
    if d_out > 2:  # one pair is paired alike by both conventions
        assert np.max(np.abs(t.tensor("other.omega") - t.tensor("omega"))) > 10 * check.attrs["bound"]


def test_the_bound_grows_with_the_offset_and_is_tight_enough_to_catch_one_position() -> None:
    near, far = tracer.trace_lesson("rope", offset=1), tracer.trace_lesson("rope", offset=100000)
    assert near["check.shift"].node.attrs["bound"] < far["check.shift"].node.attrs["bound"]
    # queries one position off (positions from 1): the scores change by far more than the bound
    moved = tracer.trace_lesson("rope", offset=1)
    assert float(moved["check.shift"].value) <= moved["check.shift"].node.attrs["bound"]
    q, k = torch.tensor(moved.tensor("q")), torch.tensor(moved.tensor("k"))
    pos = torch.arange(6)
    off_by_one = rope_half(q, pos + 1, BASE) @ rope_half(k, pos, BASE).T
    limit = near["check.shift"].node.attrs["bound"]
    assert (off_by_one - torch.tensor(moved.tensor("omega"))).abs().max() > 100 * limit


@pytest.mark.parametrize("d_out", [2, 4, 8])
def test_permuted_columns_map_interleaved_onto_half_split_exactly(d_out: int) -> None:
    t = tracer.trace_lesson("rope", d_out=d_out)
    assert np.array_equal(t.tensor("perm.back.q"), t.tensor("rope.q"))
    assert np.array_equal(t.tensor("perm.back.k"), t.tensor("rope.k"))
    assert float(t["check.perm.q"].value) == 0.0 and float(t["check.perm.k"].value) == 0.0
    check = t["check.perm"].node
    assert float(check.value) <= check.attrs["bound"]
    if d_out > 2:  # with one pair the two conventions are the same pairing
        assert float(t["check.other"].value) > 1e-2


def test_token_one_is_not_turned_and_lengths_are_kept() -> None:
    t = tracer.trace_lesson("rope")
    assert np.array_equal(t.tensor("rope.q")[0], t.tensor("q")[0])
    for n in ("q", "k"):
        a, b = t.tensor(f"rope.{n}.x"), t.tensor(f"rope.{n}.y")
        ra, rb = t.tensor(f"rope.{n}.rx"), t.tensor(f"rope.{n}.ry")
        assert np.allclose(a.astype(float) ** 2 + b**2, ra.astype(float) ** 2 + rb**2, rtol=1e-6)
    assert t.tensor("rope.theta").tolist() == [1.0, np.float32(0.01)]
    assert t["rope.q.x[2,2]"].inputs == ("q[2,2]",) and t["rope.q.y[2,2]"].inputs == ("q[2,4]",)
    assert t["other.q.x[2,2]"].inputs == ("q[2,3]",) and t["other.q.y[2,2]"].inputs == ("q[2,4]",)
    assert t["perm.W_query[1,2]"].inputs == ("W_query[1,3]",)


def test_cos_sin_and_frequencies_are_correctly_rounded() -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-700, 700, 2000), rng.normal(0, 3, 2000)]).astype(np.float32)
    with exact.counting() as tally:
        c, s = trig.cos(x), trig.sin(x)
    assert tally.entries == 2 * x.size and tally.slow < x.size // 50  # decimal is the rare path
    ref32 = np.dtype(np.float32)
    for v, cv, sv in zip(x[:400], c[:400], s[:400], strict=True):
        assert trig.nearest(float(v), "cos", ref32) == cv and trig.nearest(float(v), "sin", ref32) == sv
    x64 = rng.uniform(-50, 50, 200)
    assert np.all(np.abs(trig.cos(x64) - np.cos(x64)) <= np.spacing(np.abs(np.cos(x64))))
    assert trig.frequencies(10000.0, 4, ref32).tolist() == [1.0, np.float32(0.01)]
    f = trig.frequencies(10000.0, 64, np.dtype(np.float64))
    assert np.allclose(f, 10000.0 ** (-np.arange(0, 64, 2) / 64), rtol=1e-15, atol=0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"d_out": 3}, "d_out must be even"),
        ({"base": 1.0}, "base must be a finite number above 1"),
        ({"base": float("inf")}, "base must be a finite"),
        ({"offset": 2.5}, "offset must be a whole number"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        tracer.trace_lesson("rope", **options)


def test_the_cli_takes_base_and_offset(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    ok = CliRunner().invoke(app, ["trace", "--lesson", "rope", "--base", "500000", "--offset", "3", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    assert tracer.load(out).meta["rope"] == {"base": 500000.0, "offset": 3, "style": "half", "d": 4}
    bad = CliRunner().invoke(app, ["trace", "--lesson", "rope", "--d-out", "5"])
    assert bad.exit_code == 2 and "--d-out must be even" in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_committed_reports_are_current(lang: str) -> None:
    compare(ROOT / "reports" / "rope" / lang, report.build(tracer.trace_lesson("rope"), lang))


def test_narratives_agree_and_name_real_nodes() -> None:
    en, zh = narrative.load("rope", "en"), narrative.load("rope", "zh")
    assert {n: s.lists() for n, s in en.stages.items()} == {n: s.lists() for n, s in zh.stages.items()}
    t = tracer.trace_lesson("rope")
    assert list(en.stages) == list(t.stages)
    for story in (en, zh):
        for st in story.stages.values():
            for name in [*(st.show or ()), *st.heatmap, *st.bars, *st.write]:
                t.node(name)
                assert story.node(name).caption, name


def test_the_page_states_residual_and_bound() -> None:
    t = tracer.trace_lesson("rope")
    page = report.build(t, "en", formats=("md",))["index.md"].decode()
    check = t["check.shift"].node
    assert f"{float(check.value):.2e} ≤ {check.attrs['bound']:.1e}" in page


def test_an_edited_cos_is_found_by_verify() -> None:
    import dataclasses

    t = tracer.trace_lesson("rope")
    nodes = list(t.nodes)
    at = next(n for n, node in enumerate(nodes) if node.name == "rope.cos")
    value = np.array(nodes[at].value)
    value[3, 1] = np.float32(0.5)
    nodes[at] = dataclasses.replace(nodes[at], value=value)
    result = tracer.Trace(nodes, t.meta).verify()
    assert not result.ok and result.wrong[0].node == "rope.cos" and result.wrong[0].ids == ("rope.cos[4,2]",)


CORPUS = ROOT / "tests" / "check_corpus"


def test_check_takes_the_style_from_python_and_refuses_it_elsewhere() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("rope_complex", CORPUS / "rope_complex.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert tracer.check(mod.RotaryAttention, lesson="rope", rope_style="interleaved").ok
    wrong = tracer.check(mod.RotaryAttention, lesson="rope")
    assert not wrong.ok and wrong.diagnosis == "rope_style_other"
    with pytest.raises(InputError, match="rope_style is half or interleaved"):
        tracer.check(mod.RotaryAttention, lesson="rope", rope_style="diagonal")
    res = CliRunner().invoke(
        app, ["check", f"{CORPUS / 'rope_half.py'}:RoPEAttention", "--lesson", "causal", "--rope-style", "half"]
    )
    assert res.exit_code == 2 and "--rope-style goes with --lesson rope" in res.output and "Traceback" not in res.output
