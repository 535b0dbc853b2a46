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
from tracer.message import Message
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
        raise InputError(Message("model.reading_safetensors_needs_safetensors")) from None
    config = parse_json(read_bytes(folder / "config.json", "JSON file"), quoted(folder / "config.json"))
    if not isinstance(config, dict):
        raise InputError(Message("model.not_json_object", file=quoted(folder / "config.json")))
    cfg = make_config(config, folder)
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise InputError(Message("model.no_model_safetensors_bin", folder=quoted(folder)))
    try:
        handle: Any = safe_open(str(weights), framework="pt")
        stored = set(handle.keys())
    except (SafetensorError, OSError, ValueError) as e:
        raise InputError(
            Message("model.not_readable_safetensors_file", weights=quoted(weights), error=one_line(e))
        ) from None
    kinds: dict[str, str] = {}
    for name, shape in cfg.shapes.items():
        key = file_name(name)
        if key not in stored:
            if name == "head" and config.get("tie_word_embeddings", True) is not False:
                continue
            raise InputError(Message("model.no_tensor", file=quoted(weights), key=key))
        sl = handle.get_slice(key)
        if tuple(sl.get_shape()) != shape:
            raise InputError(
                Message(
                    "model.tensor_shape_config_says",
                    weights=quoted(weights),
                    key=key,
                    found=str(tuple(sl.get_shape())),
                    shape=str(shape),
                )
            )
        kinds[name] = str(sl.get_dtype())
    if any(k.endswith(".bias") for k in stored):
        raise InputError(Message("model.biases_lesson_reads_bias", weights=quoted(weights)))

    def read_weight(name: str, rows: list[int] | None = None) -> np.ndarray:
        key = file_name("embed" if name == "head" and "head" not in kinds else name)
        try:
            t = handle.get_tensor(key)
        except (SafetensorError, OSError, ValueError, RuntimeError) as e:
            raise InputError(
                Message("model.tensor_cannot_read", weights=quoted(weights), key=key, error=one_line(e))
            ) from None
        if not t.is_floating_point():
            raise InputError(
                Message("model.tensor_not_floating_point", weights=quoted(weights), key=key, dtype=str(t.dtype))
            )
        out: np.ndarray = (t if rows is None else t[rows]).to(torch.float64).numpy()
        return out

    tok = tokenizer(folder / "tokenizer.json")
    return Checkpoint(cfg, tok, None, read_weight, kinds, source=quoted(folder))


def make_config(c: dict[str, Any], folder: Path) -> Config:
    """The sizes ``config.json`` states, checked."""
    kind = c.get("model_type")
    if kind not in FAMILY:
        raise InputError(
            Message(
                "model.holds_model_lesson_reads_2", folder=quoted(folder), kind=repr(kind), family=", ".join(FAMILY)
            )
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
        raise InputError(Message("model.head_dim_differs_hidden", folder=quoted(folder)))
    stated = rope_theta(c, folder)
    try:
        base, eps = float(stated), float(c.get("rms_norm_eps", 1e-6))
    except (TypeError, ValueError):
        raise InputError(Message("model.rope_theta_rms_norm", folder=quoted(folder))) from None
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
        raise InputError(Message("model.scales_rotary_embedding_rope", folder=quoted(folder)))
    if params is None:
        return c.get("rope_theta", 10000.0)
    if not isinstance(params, dict) or "rope_theta" not in params:
        raise InputError(Message("model.no_rope_theta", folder=quoted(folder)))
    if c.get("rope_theta", params["rope_theta"]) != params["rope_theta"]:
        raise InputError(Message("model.two_rope_bases", folder=quoted(folder)))
    return params["rope_theta"]


def tokenizer(path: Path) -> Any:
    """The ``tokenizers.Tokenizer`` in ``tokenizer.json``."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise InputError(Message("model.reading_tokenizer_json_needs")) from None
    raw = read_bytes(path, "tokenizer file")
    try:
        return Tokenizer.from_str(raw.decode("utf-8"))
    except (UnicodeDecodeError, Exception) as e:
        raise InputError(Message("model.not_readable_tokenizer", file=quoted(path), error=one_line(e))) from None
