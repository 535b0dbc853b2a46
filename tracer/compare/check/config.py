"""A published class's configuration object, filled from the lesson's sizes by its fields' names.

Real attention layers are rarely built from bare sizes: Hugging Face's
``LlamaAttention(config, layer_idx)`` reads ``config.hidden_size``,
``num_attention_heads``, ``num_key_value_heads``, ``head_dim``; Meta's and
gpt-fast's ``Attention(args: ModelArgs)`` read ``dim``, ``n_heads``,
``n_kv_heads`` (``n_local_heads``), ``max_seq_len`` (``block_size``);
minGPT's ``CausalSelfAttention(config)`` reads ``n_embd``, ``n_head``,
``block_size``, ``attn_pdrop``.  The names differ, the meaning does not, so
:data:`FIELDS` says, for each thing a lesson's sizes fix, the names a field
goes by in these ecosystems.

:func:`parameter` finds the constructor's configuration parameter (its
annotation is a class of the student's file, or its name is one a
configuration goes by: ``config``, ``args``, ``cfg`` …), and :func:`make`
builds it: the annotated class called with the fields it takes (a
dataclass's fields, or a plain class's ``__init__`` parameters), or, when
the annotation says nothing, a :class:`Filled` namespace holding every
field of :data:`FIELDS`.  A field the lesson does not fix keeps its default
(``vocab_size``, ``rms_norm_eps`` …); one without a default, or one a
namespace is asked for and does not hold, is named in one line with the
documented way out (a factory that takes the lesson's arguments and builds
the configuration, ``docs/check.md``).  :func:`shown` writes the filled
object as Python for the verdict's notes (``LlamaConfig(hidden_size=8,
num_attention_heads=4, …)``): what was filled with what.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from types import SimpleNamespace
from typing import Any

import torch

from tracer.errors import InputError
from tracer.message import Message

WINDOW = ("window_size", "window", "sliding_window", "window_len", "attention_window", "local_window")
"""The names a window's width goes by, as a constructor's parameter or a configuration's field (one list for both)."""

SIZES: dict[str, tuple[str, ...]] = {
    "width": (
        "hidden_size", "n_embd", "n_embed", "dim", "d_model", "embed_dim", "emb_dim", "n_state", "d_embed",
        "embedding_dim", "model_dim", "hidden_dim_attn",
    ),
    "num_heads": ("num_attention_heads", "n_head", "n_heads", "num_heads", "nhead", "heads", "num_head", "h"),
    "num_kv_groups": (
        "num_key_value_heads", "n_kv_heads", "n_kv_head", "num_kv_heads", "n_local_heads", "kv_heads",
        "num_kv_groups", "n_kv_groups", "n_query_groups", "num_query_groups", "multi_query_group_num",
        "num_groups", "n_groups", "n_kv",
    ),
    "context_length": (
        "max_position_embeddings", "block_size", "max_seq_len", "n_ctx", "n_positions", "context_length",
        "max_len", "seq_len", "max_seq_length", "sequence_len", "context_len", "n_text_ctx", "max_length",
    ),
    "dropout": (
        "attention_dropout", "attn_pdrop", "attn_dropout", "attention_probs_dropout_prob", "dropout",
        "dropout_rate", "attn_drop", "p_drop", "drop", "dropout_p", "drop_rate", "dropout_prob",
    ),
    "window_size": WINDOW,
}  # fmt: skip
"""What the lesson's sizes fix -> the names it goes by, as a constructor's parameter or a configuration's field.

One list for both (:mod:`.build` reads a constructor's parameters by it,
:data:`FIELDS` a configuration's fields), compared in lower case: a layer
written ``Attention(dim, n_heads)`` and one written ``Attention(args)`` with
``args.dim``, ``args.n_heads`` take the same sizes by the same names."""

FIELDS: dict[str, tuple[str, ...]] = {
    "width": SIZES["width"],
    "num_heads": SIZES["num_heads"],
    "num_kv_groups": SIZES["num_kv_groups"],
    "head_dim": ("head_dim", "head_size", "d_head", "dim_head", "kv_channels", "d_kv", "query_pre_attn_scalar"),
    "context_length": SIZES["context_length"],
    "dropout": SIZES["dropout"],
    "other_dropout": ("resid_pdrop", "hidden_dropout_prob"),
    "window_size": SIZES["window_size"],
    "rope_theta": ("rope_theta", "rope_base", "rotary_base", "rotary_emb_base", "theta"),
    "layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "batch": ("max_batch_size",),
    "off": ("bias", "qkv_bias", "attention_bias", "use_bias", "add_qkv_bias", "use_cache", "output_attentions"),
    "eager": ("_attn_implementation", "attn_implementation"),
}  # fmt: skip
"""What a lesson's sizes fix -> the names a configuration's field for it goes by (compared in lower case).

Besides :data:`SIZES`, a configuration holds fields no constructor of the
lesson's takes: the head width, the rotary base, the number of layers, the
flags to turn off.  A residual or hidden dropout (``resid_pdrop``,
``hidden_dropout_prob``) is set to the lesson's rate as a configuration's
other dropouts are, but is not the attention's own: a constructor parameter
by that name is not given the lesson's ``dropout``."""

ROLE = {name: role for role, names in FIELDS.items() for name in names}

NAMES = ("config", "cfg", "args", "model_args", "params", "hparams", "conf", "settings", "hps", "model_config")
"""Names of a constructor parameter that takes a configuration object."""


def values(sizes: dict[str, Any], batch: int) -> dict[str, Any]:
    """The value of each role of :data:`FIELDS` for the lesson's ``sizes`` (by the book's names).

    One width (``hidden_size``) is both the inputs' and the outputs' (the
    check builds such a module with ``d_in = d_out``); a lesson without
    heads is one head; without key/value groups, as many groups as heads;
    the rotary base is the lesson's 10000; one layer; ``batch`` samples.
    """
    heads = int(sizes.get("num_heads", 1))
    return {
        "width": sizes["d_out"],
        "num_heads": heads,
        "num_kv_groups": int(sizes.get("num_kv_groups", heads)),
        "head_dim": sizes["d_out"] // heads,
        "context_length": sizes.get("context_length", 6),
        "dropout": float(sizes.get("dropout", 0.0)),
        "other_dropout": float(sizes.get("dropout", 0.0)),
        "window_size": sizes.get("window_size"),
        "rope_theta": 10000.0,
        "layers": 1,
        "batch": batch,
        "off": False,
        "eager": "eager",
    }


class Unfilled(InputError):
    """A configuration field the lesson's sizes do not fix: the class needs a factory."""


class Filled(SimpleNamespace):
    """A configuration for a class that does not say which one it takes: every field of :data:`FIELDS`.

    ``getattr(config, name, default)`` still finds its default for a field
    that is not here; a field read without one is remembered (``missing``),
    so the refusal can name it.
    """

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("__"):
            self.__dict__.setdefault("_missing", []).append(name)
        raise AttributeError(name)

    def missing(self) -> list[str]:
        """The fields the class asked for and the namespace does not hold."""
        return list(self.__dict__.get("_missing", []))


def parameter(obj: Any, params: list[inspect.Parameter]) -> tuple[inspect.Parameter, type | None] | None:
    """The constructor's configuration parameter and its class (None: a plain namespace will do), or None."""
    hints = _hints(obj)
    for p in params:
        cls = _class(hints.get(p.name))
        if cls is not None and set(map(str.lower, _fields(cls))) & set(ROLE):
            return p, cls
        if p.name.lower() in NAMES and p.default is inspect.Parameter.empty:
            return p, _beside(obj)
    return None


def _beside(obj: Any) -> type | None:
    """The configuration class defined beside ``obj`` (in its file), when exactly one names a width and heads.

    A layer whose ``config`` is not annotated is built, in its own project,
    from the configuration class its file defines (``GPT2Config`` beside
    ``GPT2Attention``); a class whose fields say both the width and the
    number of heads is one.  None when there is no such class, or several.
    """
    found = []
    for cls in _globals(obj).values():
        if isinstance(cls, type) and cls.__module__ == obj.__module__ and not issubclass(cls, torch.nn.Module):
            roles = {ROLE.get(n.lower()) for n in _fields(cls)}
            if {"width", "num_heads"} <= roles:
                found.append(cls)
    return found[0] if len(found) == 1 else None


def make(cls: type | None, sizes: dict[str, Any], batch: int, owner: str) -> tuple[Any, str]:
    """The configuration object for ``sizes``, and how it was made, as Python (``LlamaConfig(hidden_size=8, …)``)."""
    have = values(sizes, batch)
    if cls is None:
        fields = {n: have[r] for n, r in ROLE.items() if have[r] is not None and not n.startswith("_")}
        return Filled(**fields), "config(" + ", ".join(f"{n}={v!r}" for n, v in _few(fields).items()) + ")"
    names = _fields(cls)
    given = {n: have[ROLE[n.lower()]] for n in names if ROLE.get(n.lower()) and have[ROLE[n.lower()]] is not None}
    lacking = [n for n, required in names.items() if required and n not in given]
    if lacking:
        raise Unfilled(Message("trouble.config_unfilled", name=owner, config=cls.__name__, field=lacking[0]))
    try:
        made = cls(**given)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # the student's class refused the sizes: said in one line, as a build that raised
        said = Message("trouble.config_refused", name=owner, config=cls.__name__, error=f"{type(e).__name__}: {e}")
        raise Unfilled(said) from None
    return made, f"{cls.__name__}(" + ", ".join(f"{n}={v!r}" for n, v in given.items()) + ")"


def unfilled(obj: Any, config: Any, owner: str) -> Unfilled | None:
    """The refusal naming the first field a :class:`Filled` configuration was asked for and lacks (None: none)."""
    missing = config.missing() if isinstance(config, Filled) else []
    if not missing:
        return None
    return Unfilled(Message("trouble.config_unfilled", name=owner, config="config", field=missing[0]))


def _few(fields: dict[str, Any]) -> dict[str, Any]:
    """The first name of each role, as the notes show a namespace (all the others hold the same values)."""
    seen: set[str] = set()
    out = {}
    for n, v in fields.items():
        if ROLE[n] not in seen and ROLE[n] not in ("off", "eager", "layers", "batch", "rope_theta", "other_dropout"):
            seen.add(ROLE[n])
            out[n] = v
    return out


def _fields(cls: type) -> dict[str, bool]:
    """The fields ``cls`` is built with -> whether each is required (a dataclass's fields, or ``__init__``'s)."""
    if dataclasses.is_dataclass(cls):
        empty = dataclasses.MISSING
        return {f.name: f.default is empty and f.default_factory is empty for f in dataclasses.fields(cls) if f.init}
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return {}
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: p.default is inspect.Parameter.empty for p in params if p.kind in kinds}


def _hints(obj: Any) -> dict[str, Any]:
    """The constructor's annotations, resolved in its module (strings too); unresolvable ones are left out."""
    init = _init(obj)
    try:
        return typing.get_type_hints(init)
    except Exception:  # a forward reference the module cannot resolve: read each annotation alone
        pass
    glob = _globals(obj)
    out = {}
    for name, ann in getattr(init, "__annotations__", {}).items():
        if isinstance(ann, str):
            ann = glob.get(ann)
        if ann is not None:
            out[name] = ann
    return out


def _init(obj: Any) -> Any:
    """The function that builds ``obj``: a class's ``__init__``, or a factory itself."""
    return getattr(obj, "__init__", obj) if isinstance(obj, type) else obj


def _globals(obj: Any) -> dict[str, Any]:
    """The names of the file ``obj`` was defined in (a student's file is not in ``sys.modules``)."""
    glob = getattr(_init(obj), "__globals__", None)
    if isinstance(glob, dict):
        return glob
    module = sys.modules.get(getattr(obj, "__module__", ""), None)
    return dict(vars(module)) if module is not None else {}


def _class(ann: Any) -> type | None:
    """The student's class an annotation names (``Optional[LlamaConfig]`` too), or None for builtins and torch's."""
    if typing.get_origin(ann) is typing.Union:
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        ann = args[0] if len(args) == 1 else None
    if not isinstance(ann, type) or ann.__module__ in ("builtins", "typing") or ann.__module__.startswith("torch"):
        return None
    return ann
