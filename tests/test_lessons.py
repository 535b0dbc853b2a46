"""The chapter's other lessons: the book's printed numbers, a float64 reference, round trips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import tracer
from tests.mutation import shared
from tracer.core.fmt import num

# Printed in the book for the tutorial's six inputs.
BOOK = {
    ("trainable", "q[2]"): ["0.4306", "1.4551"],
    ("trainable", "omega[2]"): ["1.2705", "1.8524", "1.8111", "1.0795", "0.5577", "1.5440"],
    ("trainable", "alpha[2]"): ["0.1500", "0.2264", "0.2199", "0.1311", "0.0906", "0.1820"],
    ("trainable", "z[2]"): ["0.3061", "0.8210"],
    ("trainable", "z[6]"): ["0.2990", "0.8040"],
    ("causal", "masked.alpha[3]"): ["0.3800", "0.3097", "0.3103", "0.0000", "0.0000", "0.0000"],
    ("causal", "causal.alpha[5]"): ["0.2175", "0.1983", "0.1984", "0.1888", "0.1971", "0.0000"],
    ("causal", "alpha[1]"): ["0.1921", "0.1646", "0.1652", "0.1550", "0.1721", "0.1510"],
    ("causal", "batch.z[2,1]"): ["-0.4519", "0.2216"],
    ("causal", "batch.z[1,6]"): ["-0.5299", "-0.1081"],
    ("multihead", "wrap.concat[1,1]"): ["-0.4519", "0.2216", "0.4772", "0.1063"],
    ("multihead", "wrap.concat[2,6]"): ["-0.5299", "-0.1081", "0.5077", "0.3493"],
    ("multihead", "split.out[1,1]"): ["0.3190", "0.4858"],
    ("multihead", "split.out[2,6]"): ["0.2575", "0.4028"],
}


@pytest.fixture(scope=shared("module"))
def lessons() -> dict[str, tracer.Trace]:
    return {name: tracer.trace_lesson(name) for name in ("trainable", "causal", "multihead")}


@pytest.mark.parametrize(("lesson", "step"), list(BOOK))
def test_book_values(lessons: dict[str, tracer.Trace], lesson: str, step: str) -> None:
    assert [num(v) for v in lessons[lesson][step].value] == BOOK[(lesson, step)]


def test_linear_variant_matches_the_book() -> None:
    t = tracer.trace_lesson("trainable", weights="linear")
    assert [num(v) for v in t["z[1]"].value] == ["-0.0739", "0.0713"]
    assert [num(v) for v in t["z[6]"].value] == ["-0.0754", "0.0693"]


def test_dropout_effect_is_torch_dropout(lessons: dict[str, tracer.Trace]) -> None:
    """The mask torch draws may differ between platforms; what it does to the weights may not."""
    t = lessons["causal"]
    weights = torch.from_numpy(t.tensor("causal.alpha").copy())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        dropout = torch.nn.Dropout(0.5)
        expected = dropout(weights).numpy()
    assert np.array_equal(t.tensor("dropout.alpha"), expected)
    keep = t.tensor("dropout.keep")
    assert set(np.unique(keep)) <= {0.0, 1.0}
    np.testing.assert_array_equal(t.tensor("dropout.alpha"), t.tensor("causal.alpha") * keep * 2)
    assert t["dropout.scale"].value == 2.0


def test_two_masks_agree(lessons: dict[str, tracer.Trace]) -> None:
    t = lessons["causal"]
    assert t["check.mask"].value < 1e-6
    assert np.isneginf(t.tensor("neg.omega")[0, 1:]).all()
    assert (np.triu(t.tensor("causal.alpha"), 1) == 0).all()


def test_lessons_do_not_touch_the_global_rng() -> None:
    torch.manual_seed(42)
    before = torch.rand(3)
    torch.manual_seed(42)
    tracer.trace_lesson("causal")
    assert torch.equal(torch.rand(3), before)


# -- float64 reference -----------------------------------------------------------------
def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _causal(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = q.shape[-2]
    s = q @ np.swapaxes(k, -1, -2)
    s = np.where(np.triu(np.ones((t, t)), 1) > 0, -np.inf, s)
    a = _softmax(s / np.sqrt(k.shape[-1]))
    return a, a @ v


def reference(t: tracer.Trace) -> dict[str, np.ndarray]:
    """The lesson recomputed in float64 with plain numpy from the trace's inputs and weights."""
    g = {n.name: n.value.astype(np.float64) for n in t.nodes if n.op == "input"}
    lesson = t.meta["lesson"]
    out: dict[str, np.ndarray] = {}
    if lesson in ("trainable", "causal"):
        x = g["x"]
        q, k, v = x @ g["W_query"], x @ g["W_key"], x @ g["W_value"]
        omega = q @ k.T
        alpha = _softmax(omega / np.sqrt(k.shape[-1]))
        out |= {"q": q, "k": k, "v": v, "omega": omega, "alpha": alpha}
        if lesson == "trainable":
            out["z"] = alpha @ v
        else:
            m = alpha * np.tril(np.ones_like(alpha))
            out["masked.alpha"] = m / m.sum(axis=1, keepdims=True)
            out["causal.alpha"], _ = _causal(q, k, v)
            out["dropout.alpha"] = out["causal.alpha"] * g["dropout.keep"] * 2
            bx = g["batch.x"]
            bq, bk, bv = bx @ g["batch.W_query"], bx @ g["batch.W_key"], bx @ g["batch.W_value"]
            out["batch.causal.alpha"], out["batch.z"] = _causal(bq, bk, bv)
    else:
        x = g["x"]
        wq, wk, wv = g["wrap.W_query"], g["wrap.W_key"], g["wrap.W_value"]
        heads = [_causal(x @ wq[h], x @ wk[h], x @ wv[h])[1] for h in range(wq.shape[0])]
        out["wrap.concat"] = np.concatenate(heads, axis=-1)
        q, k, v = x @ g["split.W_query"], x @ g["split.W_key"], x @ g["split.W_value"]
        n = 2
        split = [
            _causal(*(m[..., h * (m.shape[-1] // n) : (h + 1) * (m.shape[-1] // n)] for m in (q, k, v)))[1]
            for h in range(n)
        ]
        out["split.out"] = np.concatenate(split, axis=-1) @ g["split.W_out"] + g["split.b_out"]
    return out


@pytest.mark.parametrize("lesson", ["trainable", "causal", "multihead"])
@pytest.mark.parametrize(("t", "d", "d_out"), [(6, 3, 2), (1, 1, 2), (9, 5, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_against_float64_reference(lesson: str, t: int, d: int, d_out: int, dtype: str) -> None:
    x = np.random.default_rng(t * 10 + d).uniform(-1, 1, (t, d))
    trace = tracer.trace_lesson(lesson, inputs=x, query=1, dtype=dtype, d_out=d_out)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for name, want in reference(trace).items():
        got = trace.tensor(name).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{lesson}:{name}")


@pytest.mark.parametrize("lesson", ["trainable", "causal", "multihead"])
def test_roundtrip(lessons: dict[str, tracer.Trace], lesson: str, tmp_path: Path) -> None:
    t = lessons[lesson]
    t.save(tmp_path / "t.json")
    back = tracer.load(tmp_path / "t.json")
    for a, b in zip(t.nodes, back.nodes, strict=True):
        assert np.ascontiguousarray(a.value).tobytes() == np.ascontiguousarray(b.value).tobytes(), a.name


def test_weights_from_file(tmp_path: Path) -> None:
    import json

    w = {"W_query": [[1, 0], [0, 1], [1, 1]], "W_key": [[1, 0], [0, 1], [0, 0]], "W_value": [[2, 0], [0, 2], [0, 0]]}
    (tmp_path / "w.json").write_text(json.dumps(w))
    t = tracer.trace_lesson("trainable", weights=str(tmp_path / "w.json"))
    np.testing.assert_array_equal(t.tensor("W_query"), np.array(w["W_query"], dtype=np.float32))
    assert t.meta["weights"] == {"kind": "file", "name": "w.json", "d_out": 2}
    (tmp_path / "bad.json").write_text(json.dumps({**w, "W_key": [[1, 0]]}))
    with pytest.raises(tracer.InputError, match=r"W_key must be 3 x d_out"):
        tracer.trace_lesson("trainable", weights=str(tmp_path / "bad.json"))


@pytest.mark.parametrize(
    ("lesson", "options", "message"),
    [
        ("simple", {"weights": "rand"}, "takes no option weights"),
        ("trainable", {"weights": "nope.json"}, "no such weights file"),
        ("trainable", {"d_out": 0}, "d_out must be from 1"),
        ("multihead", {"d_out": 3}, "divisible by the 2 heads"),
        ("causal", {"weights": "rand"}, "takes no option weights"),
        ("nope", {}, "unknown lesson"),
    ],
)
def test_bad_lesson_options(lesson: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(tracer.InputError, match=message):
        tracer.trace_lesson(lesson, **options)


# -- what a trace says about itself --------------------------------------------------
TUTORIAL_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
META: dict[str, dict[str, object]] = {
    "simple": {
        "stages": ["inputs", "scores", "normalize", "context", "matrix", "overflow"],
        "overflow": {"factor": 10, "max_power": 12},
    },
    "trainable": {
        "stages": ["inputs", "projections", "scores", "normalize", "context", "matrix"],
        "weights": {"kind": "rand", "seed": 123, "d_out": 2},
    },
    "causal": {
        "stages": ["inputs", "projections", "scores", "normalize", "mask", "dropout", "batch"],
        "weights": {"kind": "linear", "seed": 789, "d_out": 2},
        "dropout": {"p": 0.5, "seed": 123},
        "module": {"kind": "linear", "seed": 123, "dropout": 0.0},
    },
    "multihead": {
        "stages": ["inputs", "wrapper", "split"],
        "heads": 2,
        "modules": {"wrap": {"seed": 123}, "split": {"seed": 123, "out_bias": True}},
    },
}


@pytest.mark.parametrize("lesson", list(META))
def test_meta_names_the_lesson_its_stages_and_the_books_settings(lesson: str) -> None:
    """Seeds, dropout rate and heads are the book's; the stages are those the nodes were recorded in, in order."""
    t = tracer.trace_lesson(lesson)
    common = {
        "lesson": lesson,
        "tokens": TUTORIAL_TOKENS,
        "query": 2,
        "dtype": "float32",
        "source": {"kind": "tutorial"},
    }
    assert t.meta == {**common, "n_tokens": 6, "dim": 3, **META[lesson]}
    seen: list[str] = []
    for node in t.nodes:
        if node.stage not in seen:
            seen.append(node.stage)
    assert seen == t.meta["stages"]


def test_the_overflow_stage_is_left_out_when_no_power_of_ten_overflows() -> None:
    t = tracer.trace_self_attention(np.zeros((2, 2)))
    assert t.meta["overflow"] == {"factor": None, "max_power": 12}
    assert "overflow" not in t.meta["stages"] and not [n for n in t.nodes if n.stage == "overflow"]


def test_the_overflow_factor_comes_from_the_focus_query_row() -> None:
    """x = (0.01, 1): query 2's largest score is 1, and 1 x 10^2 already passes ln(float32 max) = 88.7, so c = 10;
    query 1's is 0.01, which needs 10^4 (c = 100)."""
    x = np.array([[0.01], [1.0]])
    assert tracer.trace_self_attention(x, query=2).meta["overflow"] == {"factor": 10, "max_power": 12}
    assert tracer.trace_self_attention(x, query=1).meta["overflow"] == {"factor": 100, "max_power": 12}


def test_the_overflow_stage_is_left_out_when_the_scaled_inputs_would_overflow() -> None:
    """Query 1's largest score is 1e-14, which needs c = 10^8; another token's 1e31 times 10^8 is past float32's
    3.4e38, so the stage is left out; at 1e29 the scaled inputs still fit and the stage is recorded."""
    big = tracer.trace_self_attention(np.array([[1e-7, 0.0], [0.0, 1e31]]), query=1)
    assert big.meta["overflow"] == {"factor": None, "max_power": 12} and "overflow" not in big.meta["stages"]
    fits = tracer.trace_self_attention(np.array([[1e-7, 0.0], [0.0, 1e29]]), query=1)
    assert fits.meta["overflow"] == {"factor": 10**8, "max_power": 12} and "overflow" in fits.meta["stages"]


@pytest.mark.parametrize("lesson", ["trainable", "causal", "multihead"])
def test_an_unknown_option_is_named_with_the_lesson(lesson: str) -> None:
    with pytest.raises(tracer.InputError, match=rf"^lesson '{lesson}' takes no option heads, zeta$"):
        tracer.trace_lesson(lesson, zeta=1, heads=2)


@pytest.mark.parametrize("lesson", ["trainable", "causal", "multihead"])
def test_the_size_check_counts_every_token(lesson: str) -> None:
    """1,024 tokens of one dim with d_out 17: the scores' products are 2 x 1,024 x 1,024 x 17 entries (twice that
    in multihead's two heads), past 2^25,
    so the lesson's weights are refused before anything is built (counted as one token they would pass)."""
    from tracer.errors import InputError
    from tracer.record import registry

    prepare = registry.pipeline_module(lesson).prepare
    with pytest.raises(InputError) as err:
        prepare(torch.full((1024, 1), 0.01), d_out=17)
    copies = 4 if lesson == "multihead" else 2  # multihead: each of the 2 copies of the inputs in each of 2 heads
    assert str(err.value) == (
        f"d_out 17 with 1024 tokens of 1 dims makes tensors of {copies * 1024 * 1024 * 17:,} entries, "
        "past the limit of 33,554,432"
    )


@pytest.mark.parametrize("lesson", ["trainable", "causal", "multihead"])
def test_the_size_check_counts_tokens_not_dimensions(lesson: str) -> None:
    """One token of 1,024 dims with d_out 18 makes small tensors (18,432 products per projection), so it is traced;
    counted as 1,024 tokens it would pass the limit of 2^25 entries (2 x 1,024 x 1,024 x 18) and be refused."""
    t = tracer.trace_lesson(lesson, inputs=np.full((1, 1024), 0.01), d_out=18, query=1)
    assert t.meta["n_tokens"] == 1 and t.meta["dim"] == 1024
