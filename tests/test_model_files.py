"""Lesson ``model``'s readers on tiny GGUF and Hugging Face models the tests write, against a plain-torch forward."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("gguf", reason="could not import gguf (a test dependency)")
pytest.importorskip("tokenizers", reason="could not import tokenizers (the model extra)")
pytest.importorskip("safetensors", reason="could not import safetensors (the model extra)")

import gguf

from tests import tinymodels as tm
from tracer.errors import InputError
from tracer.lessons.model import forward, ggufread, hfread, quant

TEXT = "the cat sat on 12 mats"


@pytest.fixture(scope="module")
def drawn() -> tuple[dict[str, torch.Tensor], object]:
    return tm.draw()


@pytest.mark.parametrize("kind", ["F16", "Q8_0", "Q4_0", "Q4_1"])
def test_dequantize_matches_gguf_and_is_exact(kind: str) -> None:
    """Our float64 numbers round to gguf's float32 ones, and Q4_1's ``d·q + m`` is computed without rounding."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((6, 64)) * 3).astype(np.float32)
    t = gguf.GGMLQuantizationType[kind]
    raw = a.astype(np.float16).view(np.uint8) if kind == "F16" else gguf.quants.quantize(a, t)
    ours = quant.dequantize(kind, raw, 6, 64)
    theirs = gguf.quants.dequantize(raw, t)
    assert ours.dtype == np.float64
    np.testing.assert_array_equal(ours.astype(np.float32), theirs.reshape(6, 64))
    if kind == "Q4_1":  # first block of row 0 by hand: d and m float16, codes in nibbles
        block = raw.reshape(-1)[:20]
        d, m = (float(v) for v in block[:4].copy().view(np.float16))
        codes = [int(b) & 15 for b in block[4:]] + [int(b) >> 4 for b in block[4:]]
        assert ours[0, :32].tolist() == [d * q + m for q in codes]


def test_dequantize_refuses_wrong_length() -> None:
    with pytest.raises(ValueError, match="bytes"):
        quant.dequantize("Q4_1", np.zeros(39, np.uint8), 1, 64)


@pytest.mark.parametrize("kind", ["F32", "Q8_0", "Q4_1"])
def test_gguf_forward_matches_plain_torch(tmp_path: Path, drawn: tuple, kind: str) -> None:
    """GGUF (interleaved pairs) through our reader and forward = the rotate-half reference on the same numbers."""
    weights, tok = drawn
    ck = ggufread.read(tm.write_gguf(tmp_path / "m.gguf", weights, tok, kind))
    assert ck.config.pairs == "interleaved" and ck.config.head_dim == 16
    ids = ck.encode(TEXT)
    assert ids == tok.encode(TEXT).ids  # the tokenizer rebuilt from the file's vocabulary and merges
    maps, probs = tm.reference(tm.stored(weights, kind), ids)
    for layer in range(tm.SIZES["layers"]):
        got = forward.run(ck, ids, layer)
        torch.testing.assert_close(got.weights, maps[layer], atol=1e-5, rtol=0)
        assert got.next_id == int(probs.argmax())
        assert got.next_p == pytest.approx(float(probs.max()), abs=1e-5)


def test_hf_forward_matches_plain_torch(tmp_path: Path, drawn: tuple) -> None:
    weights, tok = drawn
    ck = hfread.read(tm.write_hf(tmp_path / "hf", weights, tok))
    assert ck.config.pairs == "half" and ck.kinds["0.q"] == "F32"
    ids = ck.encode(TEXT)
    maps, probs = tm.reference(weights, ids)
    got = forward.run(ck, ids, 1)
    torch.testing.assert_close(got.weights, maps[1], atol=1e-5, rtol=0)
    assert (got.next_id, got.next_p) == (int(probs.argmax()), pytest.approx(float(probs.max()), abs=1e-5))


def test_both_formats_agree(tmp_path: Path, drawn: tuple) -> None:
    """The same float32 weights as a GGUF file and as a folder: the same attention, though the pairs differ."""
    weights, tok = drawn
    a = ggufread.read(tm.write_gguf(tmp_path / "m.gguf", weights, tok, "F32"))
    b = hfread.read(tm.write_hf(tmp_path / "hf", weights, tok))
    ids = a.encode(TEXT)
    torch.testing.assert_close(forward.run(a, ids, 2).weights, forward.run(b, ids, 2).weights, atol=1e-12, rtol=0)
    assert not torch.equal(torch.from_numpy(a.weight("0.q")), torch.from_numpy(b.weight("0.q")))


def test_rotation_pairs_matter(tmp_path: Path, drawn: tuple) -> None:
    """Reading a GGUF file with Hugging Face's pairs gives other weights: the convention is not a no-op."""
    weights, tok = drawn
    ck = ggufread.read(tm.write_gguf(tmp_path / "m.gguf", weights, tok, "F32"))
    ids = ck.encode(TEXT)
    right = forward.run(ck, ids, 1).weights
    ck.config = dataclasses.replace(ck.config, pairs="half")
    assert (forward.run(ck, ids, 1).weights - right).abs().max() > 1e-3


def cut(path: Path, keep: int) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    return path


@pytest.mark.parametrize("keep", [0, 3, 24, 200, 5000, -100])
def test_truncated_gguf_is_one_line(tmp_path: Path, drawn: tuple, keep: int) -> None:
    weights, tok = drawn
    path = tm.write_gguf(tmp_path / "m.gguf", weights, tok, "Q4_1")
    size = path.stat().st_size
    cut(path, keep if keep >= 0 else size + keep)
    with pytest.raises(InputError) as e:
        ggufread.read(path)
    assert "\n" not in str(e.value) and "m.gguf" in str(e.value)


def test_gguf_that_lies_about_its_sizes(tmp_path: Path, drawn: tuple) -> None:
    """A header stating 10^9 layers is refused from its metadata, before any tensor is looked at."""
    weights, tok = drawn
    path = tm.write_gguf(tmp_path / "m.gguf", weights, tok, "F32")
    data = bytearray(path.read_bytes())
    key = b"llama.block_count"
    at = data.index(key) + len(key) + 4  # after the key and its value type: the uint32 count
    data[at : at + 4] = (10**9).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="layers = 1000000000"):
        ggufread.read(path)


def test_hf_config_and_weights_checked(tmp_path: Path, drawn: tuple) -> None:
    weights, tok = drawn
    folder = tm.write_hf(tmp_path / "hf", weights, tok)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_attention_heads": 5}))
    with pytest.raises(InputError, match="do not fit together"):
        hfread.read(folder)
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt_neox"}))
    with pytest.raises(InputError, match="Llama family"):
        hfread.read(folder)
    (folder / "config.json").write_text(json.dumps({**config, "intermediate_size": 97}))
    with pytest.raises(InputError, match="shape"):
        hfread.read(folder)
    (folder / "config.json").write_text(json.dumps(config))
    cut(folder / "model.safetensors", 1000)
    with pytest.raises(InputError, match="not a readable safetensors file"):
        hfread.read(folder)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"pickles")
    with pytest.raises(InputError, match="never unpickled"):
        hfread.read(folder)


def test_hf_rotary_base_in_either_form(tmp_path: Path, drawn: tuple) -> None:
    """transformers 5 states the base in ``rope_parameters``: read from there, never the default 10000 instead."""
    weights, tok = drawn
    folder = tm.write_hf(tmp_path / "hf", weights, tok)
    config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k != "rope_theta"}
    said = {
        "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
    }
    (folder / "config.json").write_text(json.dumps({**config, **said}))
    assert hfread.read(folder).config.rope_base == 500.0
    (folder / "config.json").write_text(json.dumps({**config, "rope_theta": 500}))
    assert hfread.read(folder).config.rope_base == 500.0
    refused = [
        ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 500.0, "factor": 8.0}}, "scales its rotary"),
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, "scales its rotary"),
        ({"rope_parameters": {"rope_type": "default"}}, "does not state rope_theta"),
        ({"rope_parameters": [500.0]}, "does not state rope_theta"),
        ({"rope_parameters": {"rope_theta": 500.0}, "rope_theta": 10000.0}, "states two rotary bases"),
    ]
    for extra, message in refused:
        (folder / "config.json").write_text(json.dumps({**config, **extra}))
        with pytest.raises(InputError, match=message):
            hfread.read(folder)


def test_metadata_name_kept_as_data(tmp_path: Path, drawn: tuple) -> None:
    """A model's name is read as it is (markup and all); showing it is where it gets escaped."""
    weights, tok = drawn
    ck = ggufread.read(tm.write_gguf(tmp_path / "m.gguf", weights, tok, "F32"))
    assert ck.config.name == "tiny <b>test</b> model"
