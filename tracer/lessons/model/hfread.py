"""A Hugging Face checkpoint folder as a :class:`~.checkpoint.Checkpoint`: untrusted data, no pickle ever.

The folder holds ``config.json`` (the sizes), ``model.safetensors`` (the
weights: a JSON header of names, types, shapes and byte ranges, then the
raw numbers, read with ``safetensors``, which checks the header's ranges
against the file before handing out a tensor) and ``tokenizer.json`` (read
with ``tokenizers``).  Only the Llama family is read; a ``pytorch_model.bin``
is never loaded, since unpickling a stranger's file runs their code.  The
two JSON files are read with the size limit and strict parser every input
file of attn-trace goes through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tracer.core.files import quoted
from tracer.errors import InputError
from tracer.lessons.model.checkpoint import Checkpoint, Config, Naming
from tracer.lessons.model.ggufread import one_line
from tracer.record.untrusted import parse_json, read_bytes

file_name = Naming(
    "model.layers.",
    {"embed": "model.embed_tokens", "norm": "model.norm", "head": "lm_head"},
    "input_layernorm self_attn.q_proj self_attn.k_proj self_attn.v_proj self_attn.o_proj post_attention_layernorm "
    "mlp.gate_proj mlp.up_proj mlp.down_proj",
).file_name
FAMILY = ("llama", "mistral", "qwen2")
"""``model_type`` values whose weights and sizes follow Llama's names (Qwen2's biases are refused below)."""


def read(folder: Path) -> Checkpoint:
    """The checkpoint in ``folder``, or one line saying what is missing or wrong."""
    try:
        import torch
        from safetensors import SafetensorError, safe_open
    except ImportError:
        raise InputError(
            "reading safetensors needs the 'safetensors' package: pip install 'attn-trace[model]'"
        ) from None
    config = parse_json(read_bytes(folder / "config.json", "JSON file"), quoted(folder / "config.json"))
    if not isinstance(config, dict):
        raise InputError(f"{quoted(folder / 'config.json')} is not a JSON object")
    cfg = make_config(config, folder)
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise InputError(f"{quoted(folder)} has no model.safetensors (a .bin file is never unpickled)")
    try:
        handle: Any = safe_open(str(weights), framework="pt")
        stored = set(handle.keys())
    except (SafetensorError, OSError, ValueError) as e:
        raise InputError(f"{quoted(weights)} is not a readable safetensors file: {one_line(e)}") from None
    kinds: dict[str, str] = {}
    for name, shape in cfg.shapes.items():
        key = file_name(name)
        if key not in stored:
            if name == "head" and config.get("tie_word_embeddings", True) is not False:
                continue
            raise InputError(f"{quoted(weights)} has no tensor {key}")
        sl = handle.get_slice(key)
        if tuple(sl.get_shape()) != shape:
            raise InputError(f"{quoted(weights)}: tensor {key} has shape {tuple(sl.get_shape())}, config says {shape}")
        kinds[name] = str(sl.get_dtype())
    if any(k.endswith(".bias") for k in stored):
        raise InputError(f"{quoted(weights)} has biases; this lesson reads bias-free Llama-family models")

    def read_weight(name: str, rows: list[int] | None = None) -> np.ndarray:
        key = file_name("embed" if name == "head" and "head" not in kinds else name)
        try:
            t = handle.get_tensor(key)
        except (SafetensorError, OSError, ValueError, RuntimeError) as e:
            raise InputError(f"{quoted(weights)}: tensor {key} cannot be read: {one_line(e)}") from None
        if not t.is_floating_point():
            raise InputError(f"{quoted(weights)}: tensor {key} is {t.dtype}, not floating-point numbers")
        out: np.ndarray = (t if rows is None else t[rows]).to(torch.float64).numpy()
        return out

    tok = tokenizer(folder / "tokenizer.json")
    return Checkpoint(cfg, tok, None, read_weight, kinds, source=quoted(folder))


def make_config(c: dict[str, Any], folder: Path) -> Config:
    """The sizes ``config.json`` states, checked."""
    kind = c.get("model_type")
    if kind not in FAMILY:
        raise InputError(
            f"{quoted(folder)} holds a {kind!r} model; this lesson reads the Llama family ({', '.join(FAMILY)})"
        )

    def whole(key: str, default: int | None = None) -> Any:
        v = c.get(key, default)
        return int(v) if isinstance(v, float) and v.is_integer() else v

    heads = whole("num_attention_heads")
    width = whole("hidden_size")
    if (
        isinstance(width, int)
        and isinstance(heads, int)
        and heads
        and c.get("head_dim", width // heads) != width // heads
    ):
        raise InputError(f"{quoted(folder)}: head_dim differs from hidden_size / num_attention_heads; not read here")
    stated = rope_theta(c, folder)
    try:
        base, eps = float(stated), float(c.get("rms_norm_eps", 1e-6))
    except (TypeError, ValueError):
        raise InputError(f"{quoted(folder)}: rope_theta and rms_norm_eps must be numbers") from None
    return Config(
        layers=whole("num_hidden_layers"),
        width=width,
        heads=heads,
        kv_heads=whole("num_key_value_heads", heads),
        ffn=whole("intermediate_size"),
        vocab=whole("vocab_size"),
        rope_base=base,
        eps=eps,
        pairs="half",
        name=str(c.get("_name_or_path", "")),
    ).check()


def rope_theta(c: dict[str, Any], folder: Path) -> Any:
    """The rotary base a ``config.json`` states, for an unscaled rotation only.

    transformers 4 writes ``rope_theta`` (and ``rope_scaling`` when it
    scales); transformers 5 writes ``rope_parameters = {rope_type,
    rope_theta}``.  Either way a scaled rotation (any type but
    ``default``) is refused, and a base stated twice must be one base.
    """
    params = c.get("rope_parameters")
    kind = params.get("rope_type", "default") if isinstance(params, dict) else None
    if c.get("rope_scaling") is not None or kind not in (None, "default"):
        raise InputError(f"{quoted(folder)} scales its rotary embedding (rope_scaling); this lesson does not")
    if params is None:
        return c.get("rope_theta", 10000.0)
    if not isinstance(params, dict) or "rope_theta" not in params:
        raise InputError(f"{quoted(folder)}: rope_parameters does not state rope_theta")
    if c.get("rope_theta", params["rope_theta"]) != params["rope_theta"]:
        raise InputError(f"{quoted(folder)} states two rotary bases (rope_theta and rope_parameters)")
    return params["rope_theta"]


def tokenizer(path: Path) -> Any:
    """The ``tokenizers.Tokenizer`` in ``tokenizer.json``."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise InputError("reading tokenizer.json needs 'tokenizers': pip install 'attn-trace[model]'") from None
    raw = read_bytes(path, "tokenizer file")
    try:
        return Tokenizer.from_str(raw.decode("utf-8"))
    except (UnicodeDecodeError, Exception) as e:
        raise InputError(f"{quoted(path)} is not a readable tokenizer: {one_line(e)}") from None
