"""A Llama-architecture checkpoint as the lesson reads it, whichever file format it came from.

Both readers (:mod:`.ggufread` and :mod:`.hfread`) give a :class:`Checkpoint`:
the model's sizes (:class:`Config`, checked before any tensor is read), its
tokenizer, and its weights by one set of names, read one tensor at a time
as float64 numbers in the ``(out, in)`` layout of ``torch.nn.Linear``:

``embed`` ``norm`` ``head`` (absent when tied to ``embed``) and, for layer
``i``, ``i.attn_norm`` ``i.q`` ``i.k`` ``i.v`` ``i.o`` ``i.ffn_norm``
``i.gate`` ``i.up`` ``i.down``.

The two formats pair a head's numbers differently for the rotation.  A
Hugging Face checkpoint rotates number ``c`` with number ``c + d_h/2``
("rotate half"); llama.cpp's converter reorders the rows of the query and
key weights so that a GGUF file rotates neighbours ``2c`` and ``2c + 1``
instead.  :attr:`Config.pairs` says which, and the forward pass and the
trace rotate by it: the same scores either way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from tracer.errors import InputError
from tracer.message import Message

MAX_LAYERS, MAX_WIDTH, MAX_HEADS, MAX_VOCAB, MAX_FFN = 256, 16384, 256, 1 << 20, 65536
MAX_PARAMS = 2_000_000_000
"""Sizes past these are refused before anything is read (a header may claim anything)."""

LAYER_PARTS = ("attn_norm", "q", "k", "v", "o", "ffn_norm", "gate", "up", "down")


@dataclass(frozen=True)
class Naming:
    """How a file format names the lesson's weights: ``layer`` prefix, the model-wide names, the layer parts."""

    layer: str
    names: dict[str, str]
    parts: str
    """The format's names of :data:`LAYER_PARTS`, in that order, separated by spaces."""

    def file_name(self, name: str) -> str:
        """The format's tensor name of the lesson's weight ``name`` (``3.q`` -> ``blk.3.attn_q.weight``)."""
        if "." in name:
            layer, part = name.split(".")
            return f"{self.layer}{layer}.{self.parts.split()[LAYER_PARTS.index(part)]}.weight"
        return f"{self.names[name]}.weight"


@dataclass(frozen=True)
class Config:
    """The sizes of a Llama-architecture model, as its file states them."""

    layers: int
    width: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    rope_base: float
    eps: float
    pairs: str
    """``"interleaved"`` (GGUF: numbers 2c, 2c+1 rotate together) or ``"half"`` (Hugging Face: c and c + d_h/2)."""
    name: str = ""
    """The model's name from its metadata (shown escaped, never trusted)."""

    @property
    def head_dim(self) -> int:
        """Numbers per head: the width over the query heads."""
        return self.width // self.heads

    @cached_property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight's expected ``(out, in)`` shape by the lesson's names (``head`` included)."""
        kv, w = self.kv_heads * self.head_dim, self.width
        one = {"attn_norm": (w,), "q": (w, w), "k": (kv, w), "v": (kv, w), "o": (w, w), "ffn_norm": (w,)}
        one |= {"gate": (self.ffn, w), "up": (self.ffn, w), "down": (w, self.ffn)}
        out: dict[str, tuple[int, ...]] = {"embed": (self.vocab, w), "norm": (w,), "head": (self.vocab, w)}
        for i in range(self.layers):
            out |= {f"{i}.{k}": v for k, v in one.items()}
        return out

    def check(self) -> Config:
        """This config, or one line naming the size that no Llama model could have."""
        for what, n, top in (
            ("layers", self.layers, MAX_LAYERS),
            ("width", self.width, MAX_WIDTH),
            ("query heads", self.heads, MAX_HEADS),
            ("key/value heads", self.kv_heads, MAX_HEADS),
            ("feed-forward width", self.ffn, MAX_FFN),
            ("vocabulary size", self.vocab, MAX_VOCAB),
        ):
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= top:
                raise InputError(Message("model.model_states_must_whole", what=what, n=repr(n), top=top))
        if self.width % self.heads or self.heads % self.kv_heads or self.head_dim % 2:
            raise InputError(
                Message("model.model_s_query_heads", heads=self.heads, kv_heads=self.kv_heads, width=self.width)
            )
        if not (np.isfinite(self.rope_base) and self.rope_base > 1 and np.isfinite(self.eps) and 0 <= self.eps < 1):
            raise InputError(
                Message("model.model_states_rope_base", rope_base=repr(self.rope_base), eps=repr(self.eps))
            )
        params = sum(int(np.prod(s)) for s in self.shapes.values())
        if params > MAX_PARAMS:
            raise InputError(Message("model.model_states_parameters_more", params=params, max_params=MAX_PARAMS))
        return self


@dataclass
class Checkpoint:
    """A model read from a file: sizes, tokenizer, and a reader of one weight at a time (float64)."""

    config: Config
    tokenizer: Any
    """A ``tokenizers.Tokenizer`` built from the file's own vocabulary."""
    bos: int | None
    """The start token put before the text when a GGUF file asks for one (a tokenizer.json adds its own)."""
    read: Callable[[str, list[int] | None], np.ndarray]
    """(name, rows) -> the weight as float64 ``(out, in)``, only the listed rows unless ``None``;
    ``head`` reads ``embed`` when the two are tied."""
    kinds: dict[str, str] = field(default_factory=dict)
    """Name -> how the file stores it (``Q4_1``, ``F32``, ``BF16`` ...), for the page's note on the weights."""
    source: str = ""

    def weight(self, name: str, rows: list[int] | None = None) -> np.ndarray:
        """The weight ``name`` (only ``rows`` of it when given), checked against the shape the config promises."""
        want = self.config.shapes[name]
        if rows is not None:
            if not all(0 <= r < want[0] for r in rows):
                raise InputError(
                    Message("model.rows_weight", source=self.source, rows=str(rows), name=name, want=int(want[0]))
                )
            want = (len(rows), *want[1:])
        got = self.read(name, rows)
        if tuple(got.shape) != want:
            raise InputError(
                Message(
                    "model.weight_shape_model_s",
                    source=self.source,
                    name=name,
                    shape=str(tuple(got.shape)),
                    want=str(want),
                )
            )
        return got

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` by the model's own tokenizer, with the start token where the model wants one."""
        ids = list(self.tokenizer.encode(text, add_special_tokens=True).ids)
        return ([self.bos] if self.bos is not None else []) + ids

    def token(self, i: int) -> str:
        """The text of token ``i`` as the model's vocabulary spells it (byte-level BPE decoded)."""
        return str(self.tokenizer.decode([i], skip_special_tokens=False))
