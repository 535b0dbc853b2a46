"""A GGUF file as a :class:`~.checkpoint.Checkpoint`: sizes, tokenizer and weights, read as untrusted data.

:mod:`.gguffile` parses the header and maps the file into memory; nothing
is allocated for a tensor before its stated shape and type have been checked
against the model's sizes and its bytes against the file's length.  Whatever
the parser meets in a truncated or lying file is one
:class:`~tracer.errors.InputError` line.

The tokenizer is rebuilt from the file's own vocabulary and merges with
``tokenizers`` (byte-level BPE, ``tokenizer.ggml.model = gpt2``; the
``smollm`` pre-tokenizer splits digits one by one first, as SmolLM2's
own tokenizer does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tracer.core.files import quoted
from tracer.errors import InputError
from tracer.lessons.model.checkpoint import Checkpoint, Config, Naming
from tracer.lessons.model.gguffile import GGUF, Tensor
from tracer.lessons.model.quant import TYPES, dequantize, row_bytes
from tracer.message import Message

file_name = Naming(
    "blk.",
    {"embed": "token_embd", "norm": "output_norm", "head": "output"},
    "attn_norm attn_q attn_k attn_v attn_output ffn_norm ffn_gate ffn_up ffn_down",
).file_name
DIGITS_FIRST = ("smollm", "qwen2", "deepseek-llm")
"""Pre-tokenizer names whose text is split into single digits before byte-level BPE."""


def read(path: Path) -> Checkpoint:
    """The checkpoint in the GGUF file ``path``, or one line saying what is wrong with it."""
    if not path.is_file():
        raise InputError(Message("model.no_such_model_file", file=quoted(path)))
    file = GGUF(path)
    tensors = file.tensors
    value = metadata(file.fields, path)
    arch = value("general.architecture", str)
    if arch != "llama":
        raise InputError(Message("model.holds_model_lesson_reads", file=quoted(path), arch=repr(arch)))
    cfg = Config(
        layers=value("llama.block_count", int),
        width=value("llama.embedding_length", int),
        heads=value("llama.attention.head_count", int),
        kv_heads=value("llama.attention.head_count_kv", int),
        ffn=value("llama.feed_forward_length", int),
        vocab=len(value("tokenizer.ggml.tokens", list)),
        rope_base=float(value("llama.rope.freq_base", float, 10000.0)),
        eps=float(value("llama.attention.layer_norm_rms_epsilon", float)),
        pairs="interleaved",
        name=str(value("general.name", str, "")),
    ).check()
    kinds: dict[str, str] = {}
    shapes = cfg.shapes
    for name, shape in shapes.items():
        t = tensors.get(file_name(name))
        if t is None:
            if name == "head":
                continue
            raise InputError(Message("model.no_tensor", file=quoted(path), key=file_name(name)))
        kinds[name] = check_tensor(t, shape, file.size, path)

    def weights(name: str, rows: list[int] | None = None) -> np.ndarray:
        t = tensors[file_name("embed" if name == "head" and "head" not in kinds else name)]
        shape = shapes[name]
        height, width = (1, shape[0]) if len(shape) == 1 else shape
        raw = file.data(t, height * row_bytes(t.kind, width)).reshape(height, -1)
        if rows is not None:  # only these rows: the embeddings of a sentence's tokens
            raw, height, shape = raw[rows], len(rows), (len(rows), width)
        try:
            return dequantize(t.kind, raw, height, width).reshape(shape)
        except ValueError as e:
            raise InputError(Message("model.tensor", file=quoted(path), name=t.name, error=str(e))) from None

    merges = [tuple(m.split(" ", 1)) for m in value("tokenizer.ggml.merges", list)]
    tok = tokenizer(value("tokenizer.ggml.tokens", list), merges, str(value("tokenizer.ggml.pre", str, "default")))
    bos = (
        value("tokenizer.ggml.bos_token_id", int, None) if value("tokenizer.ggml.add_bos_token", bool, False) else None
    )
    if bos is not None and not 0 <= bos < cfg.vocab:
        raise InputError(Message("model.states_start_token_outside", file=quoted(path), bos=str(bos), vocab=cfg.vocab))
    if value("tokenizer.ggml.model", str) != "gpt2":
        raise InputError(Message("model.s_tokenizer_not_byte", file=quoted(path)))
    return Checkpoint(cfg, tok, bos, weights, kinds, source=quoted(path))


def one_line(e: BaseException) -> str:
    """An exception's message on one line, cut to a readable length."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:200]


def metadata(fields: dict[str, Any], path: Path) -> Any:
    """``value(key, type, default)``: a metadata value of the stated type, or one line naming the key."""
    missing = object()

    def value(key: str, kind: type, default: Any = missing) -> Any:
        if key not in fields:
            if default is missing:
                raise InputError(Message("model.no_metadata", file=quoted(path), key=key))
            return default
        got = fields[key]
        ok = isinstance(got, kind) and not (kind is int and isinstance(got, bool))
        if kind is float and isinstance(got, int) and not isinstance(got, bool):
            got, ok = float(got), True
        if kind is list and ok and not all(isinstance(s, str) for s in got):
            ok = False
        if not ok:
            raise InputError(Message("model.metadata_not", file=quoted(path), key=key, type=kind.__name__))
        return got

    return value


def check_tensor(t: Tensor, shape: tuple[int, ...], size: int, path: Path) -> str:
    """The tensor's type name, once its type, shape and bytes fit the model's sizes and the file."""
    kind = t.kind
    if kind not in TYPES:
        raise InputError(
            Message("model.tensor_lesson_reads", file=quoted(path), name=t.name, kind=kind, types=", ".join(TYPES))
        )
    if t.dims != shape:
        raise InputError(
            Message("model.tensor_shape_model_s", file=quoted(path), name=t.name, dims=str(t.dims), shape=str(shape))
        )
    rows, width = (1, shape[0]) if len(shape) == 1 else shape
    if kind not in ("F32", "F16") and width % 32:
        raise InputError(
            Message("model.tensor_rows_not_multiple", file=quoted(path), name=t.name, kind=str(kind), width=int(width))
        )
    need = rows * row_bytes(kind, width)
    if t.start + need > size:
        raise InputError(Message("model.tensor_needs_bytes_file_2", file=quoted(path), name=t.name, need=need))
    return kind


def tokenizer(tokens: list[str], merges: list[tuple[str, ...]], pre: str) -> Any:
    """A byte-level BPE ``tokenizers.Tokenizer`` from a vocabulary, its merges and a pre-tokenizer name."""
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    except ImportError:
        raise InputError(Message("model.reading_model_s_tokenizer")) from None
    if any(len(m) != 2 for m in merges):
        raise InputError(Message("model.model_s_merges_not"))
    vocab = {s: i for i, s in enumerate(tokens)}
    try:
        tok = Tokenizer(models.BPE(vocab=vocab, merges=[(a, b) for a, b in merges]))
    except Exception as e:
        raise InputError(Message("model.model_s_vocabulary_merges", error=one_line(e))) from None
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre in DIGITS_FIRST:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    return tok
