"""Tiny Llama-architecture models the tests write themselves, in both formats, and a plain-torch forward of them.

:func:`draw` makes random weights in Hugging Face's layout and a byte-level
BPE tokenizer trained on a few sentences; :func:`write_hf` saves them as a
checkpoint folder, :func:`write_gguf` as a GGUF file with the query and key
rows reordered the way llama.cpp's converter reorders them (so the file
rotates neighbouring pairs) and the matrices stored in a chosen type.
:func:`reference` is an independent forward pass written from the model's
definition (rotate-half on the Hugging Face layout, complex-number
rotation, explicit softmax), in float64, giving every layer's attention
weights and the last token's next-token probabilities.

:func:`lesson_trace` is how tests that run every
lesson (verify, explain, display, narratives) run lesson ``model``: on a
tiny model written once per test process, so that only the tests whose
subject is the real model pay for reading it.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

import tracer

SIZES = {"layers": 3, "width": 64, "heads": 4, "kv_heads": 2, "ffn": 96, "base": 10000.0, "eps": 1e-5}
TEXTS = ["the cat sat on the mat", "a dog ran after the cat", "attention is all you need", "12 cats and 3 dogs"]
LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def train_tokenizer() -> Any:
    """A byte-level BPE tokenizer of about 300 tokens, trained on :data:`TEXTS`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(TEXTS, trainers.BpeTrainer(vocab_size=300, initial_alphabet=alphabet, show_progress=False))
    return tok


def draw(seed: int = 0) -> tuple[dict[str, torch.Tensor], Any]:
    """Random weights (Hugging Face names, ``(out, in)``, float32) and the tokenizer."""
    tok = train_tokenizer()
    g = torch.Generator().manual_seed(seed)
    s, vocab = SIZES, tok.get_vocab_size()
    w, dh = s["width"], s["width"] // s["heads"]
    shapes = {"q_proj": (w, w), "k_proj": (s["kv_heads"] * dh, w), "v_proj": (s["kv_heads"] * dh, w)}
    shapes |= {"o_proj": (w, w), "gate_proj": (s["ffn"], w), "up_proj": (s["ffn"], w), "down_proj": (w, s["ffn"])}
    out = {
        "model.embed_tokens.weight": torch.randn(vocab, w, generator=g),
        "model.norm.weight": 1 + 0.1 * torch.randn(w, generator=g),
    }
    for i in range(s["layers"]):
        pre = f"model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            out[f"{pre}{n}.weight"] = 1 + 0.1 * torch.randn(w, generator=g)
        for n in LINEAR:
            kind = "mlp" if n in ("gate_proj", "up_proj", "down_proj") else "self_attn"
            out[f"{pre}{kind}.{n}.weight"] = torch.randn(*shapes[n], generator=g) * 0.6 / shapes[n][1] ** 0.5 * 3
    return out, tok


def write_hf(folder: Path, weights: dict[str, torch.Tensor], tok: Any) -> Path:
    """The weights as a Hugging Face checkpoint folder (config.json, model.safetensors, tokenizer.json)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    s = SIZES
    config = {
        "model_type": "llama", "num_hidden_layers": s["layers"], "hidden_size": s["width"],
        "num_attention_heads": s["heads"], "num_key_value_heads": s["kv_heads"], "intermediate_size": s["ffn"],
        "vocab_size": tok.get_vocab_size(), "rope_theta": s["base"], "rms_norm_eps": s["eps"],
        "tie_word_embeddings": True,
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    save_file({k: v.contiguous() for k, v in weights.items()}, str(folder / "model.safetensors"))
    tok.save(str(folder / "tokenizer.json"))
    return folder


def to_interleaved(w: torch.Tensor, heads: int) -> torch.Tensor:
    """Rows of a query or key weight reordered as llama.cpp's converter does: pair (c, c+d/2) becomes (2c, 2c+1)."""
    out, inp = w.shape
    return w.reshape(heads, 2, out // heads // 2, inp).transpose(1, 2).reshape(out, inp)


def write_gguf(path: Path, weights: dict[str, torch.Tensor], tok: Any, kind: str = "F32") -> Path:
    """The weights as a GGUF file, the matrices stored as ``kind`` (F32, F16, Q8_0, Q4_0, Q4_1)."""
    import gguf

    s = SIZES
    wr = gguf.GGUFWriter(str(path), "llama")
    wr.add_name("tiny <b>test</b> model")
    wr.add_block_count(s["layers"])
    wr.add_context_length(64)
    wr.add_embedding_length(s["width"])
    wr.add_feed_forward_length(s["ffn"])
    wr.add_head_count(s["heads"])
    wr.add_head_count_kv(s["kv_heads"])
    wr.add_rope_freq_base(s["base"])
    wr.add_layer_norm_rms_eps(s["eps"])
    wr.add_tokenizer_model("gpt2")
    wr.add_tokenizer_pre("default")
    model = json.loads(tok.to_str())["model"]
    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    wr.add_token_list([t for t, _ in vocab])
    wr.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in model["merges"]])
    wr.add_add_bos_token(False)
    names = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output"}
    names |= {"gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
    names |= {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for name, t in weights.items():
        if name == "model.embed_tokens.weight":
            out = "token_embd.weight"
        elif name == "model.norm.weight":
            out = "output_norm.weight"
        else:
            parts = name.split(".")
            part = parts[-2]
            out = f"blk.{parts[2]}.{names[part]}.weight"
            if part in ("q_proj", "k_proj"):
                t = to_interleaved(t, s["heads"] if part == "q_proj" else s["kv_heads"])
        add(wr, out, t.numpy(), kind if t.dim() == 2 else "F32")
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return path


def add(wr: Any, name: str, a: np.ndarray, kind: str) -> None:
    """One tensor added to a GGUF writer, quantized by ``gguf``'s own quantizer when ``kind`` asks."""
    import gguf

    t = gguf.GGMLQuantizationType[kind]
    if kind == "F32":
        wr.add_tensor(name, a.astype(np.float32))
    elif kind == "F16":
        wr.add_tensor(name, a.astype(np.float16))
    else:
        wr.add_tensor(name, gguf.quants.quantize(a.astype(np.float32), t), raw_dtype=t)


def stored(weights: dict[str, torch.Tensor], kind: str) -> dict[str, torch.Tensor]:
    """The weights as a GGUF file of ``kind`` stores them, read back by ``gguf``'s own dequantizer (float64)."""
    import gguf

    t = gguf.GGMLQuantizationType[kind]
    out = {}
    for name, w in weights.items():
        a = w.numpy().astype(np.float32)
        if w.dim() == 2 and kind != "F32":
            a = (
                a.astype(np.float16).astype(np.float32)
                if kind == "F16"
                else gguf.quants.dequantize(gguf.quants.quantize(a, t), t)
            )
        out[name] = torch.from_numpy(np.asarray(a, dtype=np.float64))
    return out


def rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def reference(weights: dict[str, torch.Tensor], ids: list[int]) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Every layer's attention weights ``(heads, T, T)`` and the last token's next-token probabilities, float64."""
    maps, x = layers(weights, ids, SIZES, SIZES["layers"])
    last = rms(x[-1], weights["model.norm.weight"].to(torch.float64), SIZES["eps"])
    return maps, torch.softmax(last @ weights["model.embed_tokens.weight"].to(torch.float64).T, -1)


def layers(
    weights: dict[str, torch.Tensor], ids: list[int], s: dict[str, Any], upto: int
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The first ``upto`` layers of a model of sizes ``s``: their attention weights and the residual stream after."""
    w = {k: v.to(torch.float64) for k, v in weights.items()}
    dh, t, eps = s["width"] // s["heads"], len(ids), s["eps"]
    inv = 1.0 / s["base"] ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh)
    turn = torch.polar(
        torch.ones(t, dh // 2, dtype=torch.float64), torch.outer(torch.arange(t, dtype=torch.float64), inv)
    )

    def rope(x: torch.Tensor) -> torch.Tensor:  # x: (n, t, dh), halves are the real and imaginary parts
        z = torch.complex(x[..., : dh // 2], x[..., dh // 2 :]) * turn
        return torch.cat((z.real, z.imag), dim=-1)

    x = w["model.embed_tokens.weight"][ids]
    maps = []
    for i in range(upto):
        p = f"model.layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(t, s["heads"], dh).permute(1, 0, 2)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(t, s["kv_heads"], dh).permute(1, 0, 2)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(t, s["kv_heads"], dh).permute(1, 0, 2)
        q, k = rope(q), rope(k)
        group = [hh * s["kv_heads"] // s["heads"] for hh in range(s["heads"])]
        k, v = k[group], v[group]
        logits = torch.einsum("hid,hjd->hij", q, k) / dh**0.5
        logits = logits + torch.full((t, t), float("-inf"), dtype=torch.float64).triu(1)
        e = torch.exp(logits - logits.max(-1, keepdim=True).values)
        a = e / e.sum(-1, keepdim=True)
        maps.append(a)
        x = x + torch.einsum("hij,hjd->ihd", a, v).reshape(t, -1) @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + (gate * torch.sigmoid(gate) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    return maps, x


REAL_MODEL_LESSON = "model"
"""The lesson that reads a trained model: given :func:`stand_in` options wherever it is not the subject."""


@functools.cache
def stand_in_file() -> Path:
    """A tiny Q4_1 GGUF model, written once per test process into a folder removed when the process ends."""
    folder = Path(tempfile.mkdtemp(prefix="attn-trace-tiny-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    weights, tok = draw(seed=3)
    return write_gguf(folder / "tiny.gguf", weights, tok, "Q4_1")


def stand_in(lesson: str) -> dict[str, Any]:
    """The options that make ``lesson`` cheap to trace: the tiny model for lesson model, nothing for the others."""
    if lesson != REAL_MODEL_LESSON:
        return {}
    return {"model": str(stand_in_file()), "text": "the cat sat", "layer": 1, "head": 2}


def lesson_trace(lesson: str) -> tracer.Trace:
    """``tracer.trace_lesson(lesson)``, lesson model on the tiny stand-in."""
    return tracer.trace_lesson(lesson, **stand_in(lesson))
