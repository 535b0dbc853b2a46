"""What the check passes a student's ``forward`` besides the tokens, recognised by the parameter's name.

Real attention code often leaves part of the work to its caller: Hugging
Face's layers take ``position_ids`` or the ``(cos, sin)`` pair
(``position_embeddings``) and an ``attention_mask``; Meta's Llama takes
``start_pos``, ``freqs_cis`` and ``mask``; gpt-fast ``freqs_cis`` and
``mask``.  The check calls ``forward(x)``; every further parameter that has
no default is looked up in :data:`TABLE` by its name (lower case) and given
the value the lesson itself would use at the call's ``T`` tokens:

- positions (any lesson): ``position_ids`` the 0-based positions of every
  sample, ``(b, T)`` as Hugging Face passes them; ``positions``,
  ``input_pos``, ``cache_position`` one row ``(T,)``; ``start_pos`` and the
  like the int 0 (lesson rope's ``m = i − 1``);
- rotary tables: ``cos`` and ``sin`` of ``m θ_p`` with
  the lesson's ``θ_p = 10000^(−2(p−1)/d)``, ``(b, T, d)`` laid out for the
  checked ``--rope-style`` (``half``: Hugging Face's ``cat(freqs, freqs)``;
  ``interleaved``: each angle twice, ``repeat_interleave``);
  ``position_embeddings`` the pair ``(cos, sin)`` (or nanochat's half-width
  pair); ``freqs_cis`` Meta's complex ``e^(i m θ_p)``, ``(T, d/2)``, whatever
  the style (the pairing is the code's own reshape), or gpt-fast's real
  pairs; llama2.c's ``freqs_cos`` and ``freqs_sin``.  A lesson that turns
  nothing gives the same tables at angle 0 (the identity rotation), so a
  layer whose model owns the rotation computes the lesson's attention
  (:mod:`.argvalues` makes every value);
- the causal mask (every lesson that masks): ``mask``, ``attn_mask``,
  ``attention_mask``, ``causal_mask``, ``(T, T)`` for the one-head lessons
  and ``(1, 1, T, T)`` for the multi-head ones, in one of three forms
  (:data:`MASKS`): additive float, 0 where a token may attend and −inf
  above the diagonal (``scores + mask``, the float ``attn_mask`` of
  ``F.scaled_dot_product_attention``; as ``mask.bool()`` the book's
  True-above-the-diagonal), boolean keep (True where a token may attend,
  ``masked_fill(mask == 0, …)``) or boolean hide (True above the diagonal,
  ``masked_fill(mask, …)``).  The name does not say which the code reads,
  nor the shape (the Annotated Transformer's layer widens a ``(1, T, T)``
  mask with ``unsqueeze(1)``): :mod:`.maskforms` tries them and ``bind`` is
  told the one chosen (:class:`Mask`);
- d2l's ``valid_lens``: ``i + 1`` for query row ``i``, how its decoder masks
  causally;
- the keys' and values' tokens (``key``, ``value``, ``keys``, ``values``,
  ``k``, ``v``, as ``forward(query, key, value, mask)`` takes them): the
  tokens themselves, since the lesson is self-attention;
- flags: ``is_causal`` True; ``use_cache``, ``output_attentions``,
  ``need_weights`` False; a cache (``past_key_value``, ``layer_past`` …) or a
  padding mask None.

A parameter with a default keeps it (the module is called as a caller that
passes only what it must), except a mask the code leaves to its caller
(``forward(x, mask=None)`` that computes no causal mask of its own): that
one is passed, by name, when :mod:`.maskforms` finds that the code is the
lesson's with it and not without.  A required parameter the table does not know is
an :class:`~tracer.errors.InputError` naming it.  Whatever the check makes
here is the lesson's, so a mistake in making it cannot show; what the
student's code does with it is compared as always (``docs/check.md``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from tracer.compare.check.argvalues import FORMS
from tracer.compare.check.argvalues import MASKS as ALL_MASKS
from tracer.compare.check.argvalues import ROTARY as ROTARY
from tracer.compare.check.argvalues import STILL as STILL
from tracer.compare.check.argvalues import value as value
from tracer.compare.check.lessons import Spec
from tracer.errors import InputError
from tracer.message import Message

MASKS = FORMS
"""The causal mask's forms, in the order they are tried: additive float, boolean keep, boolean hide."""

TABLE: dict[str, tuple[str, ...]] = {
    "position_ids": ("position_ids", "pos_ids"),
    "positions": ("positions", "input_pos", "cache_position", "pos_tensor", "token_positions"),
    "start": ("start_pos", "start", "pos", "offset", "past_length", "past_len", "cur_pos", "n_past", "seqlen_offset"),
    "cos": ("cos",),
    "sin": ("sin",),
    "cos_sin": ("position_embeddings", "cos_sin", "rotary_pos_emb", "rope_cache"),
    "cos_sin_half": (),  # the pair's other form: never asked for by name, chosen by trying (:mod:`.maskforms`)
    "freqs_cis": ("freqs_cis", "freqs_complex", "freq_cis"),
    "freqs_pairs": (),
    "freqs_cos": ("freqs_cos",),
    "freqs_sin": ("freqs_sin",),
    **{k: () for k in STILL},  # a rotary table at angle 0, for a lesson that turns nothing
    "mask": ("mask", "attn_mask", "attention_mask", "causal_mask", "attn_bias"),
    **{k: () for k in ALL_MASKS[1:]},  # a mask's other forms: never asked for by name, chosen by trying
    "valid_lens": ("valid_lens", "valid_len", "dec_valid_lens"),
    "tokens": ("key", "value", "keys", "values", "k", "v"),
    "sequence_first": (),  # the tokens' own parameter, when they go in as (T, b, d): chosen by trying
    "true": ("is_causal", "causal"),
    "false": ("use_cache", "output_attentions", "need_weights", "return_attention", "return_weights"),
    "none": (
        "past_key_value", "past_key_values", "layer_past", "kv_cache", "cache", "past",
        "key_padding_mask", "padding_mask", "head_mask",
    ),
}  # fmt: skip
"""Kind -> the parameter names (lower case) that take it."""

KIND = {name: kind for kind, names in TABLE.items() for name in names}
ALTERNATIVES = {"cos_sin": ("cos_sin", "cos_sin_half"), "freqs_cis": ("freqs_cis", "freqs_pairs")}
"""A rotary kind asked for by name -> the forms its callers give it in (:mod:`.maskforms` tries each)."""


def alternatives(kind: str) -> tuple[str, ...]:
    """The forms tried for a parameter of ``kind`` (``still_`` ones for a lesson that turns nothing); ``()``: one."""
    still = kind.startswith("still_")
    forms = ALTERNATIVES.get(kind.removeprefix("still_"), ())
    return tuple(f"still_{f}" for f in forms) if still else forms


GROUPS = {
    "positions": ("position_ids", "positions", "start"),
    "rotary": ROTARY,
    "still": STILL,
    "mask": ("mask",),
    "mask_keep": ("mask_keep",),
    "mask_hide": ("mask_hide",),
    "mask_band": ("mask_band", "mask_keep_band", "mask_hide_band"),
    "valid_lens": ("valid_lens",),
    "flags": ("true", "false", "none"),
    "tokens": ("tokens",),
    "sequence_first": ("sequence_first",),
}
"""The report's note for each group of kinds (``check.note_given_<group>``): what was passed, what cannot show."""


def notes(given: dict[str, str]) -> list[str]:
    """The notes ``given_<group>`` for the groups of what was passed, in :data:`GROUPS`' order."""
    return [f"given_{g}" for g, ks in GROUPS.items() if any(k in ks for k in given.values())]


def named(given: dict[str, str], note: str) -> str:
    """The parameters behind note ``given_<group>``, as the code names them (``position_ids, mask``)."""
    group = GROUPS.get(note.removeprefix("given_"), ())
    return ", ".join(n for n, k in given.items() if k in group)


def required(fn: Any) -> list[inspect.Parameter]:
    """The parameters of ``fn`` after the first that have no default (``*args`` and ``**kwargs`` are not)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in params[1:] if p.kind in kinds and p.default is inspect.Parameter.empty]


def optional_masks(module: Any) -> list[str]:
    """The parameters of ``module.forward`` named as a mask (``mask``, ``attn_mask`` …) that have a default."""
    try:
        params = list(inspect.signature(getattr(module, "forward", module)).parameters.values())
    except (TypeError, ValueError):
        return []
    empty = inspect.Parameter.empty
    return [p.name for p in params[1:] if p.default is not empty and KIND.get(p.name.lower()) == "mask"]


def kinds(module: Any, spec: Spec, optional: tuple[str, ...] = ()) -> dict[str, str]:
    """Each required parameter of ``module.forward`` beyond the tokens -> its kind, or an :class:`InputError`.

    ``optional`` names parameters with a default that are passed all the same
    (a mask the code leaves to its caller, :mod:`.maskforms`).
    """
    forward = getattr(module, "forward", module)
    out = {}
    params = required(forward)
    if optional:  # names read off this signature already (:func:`optional_masks`)
        params += [p for p in inspect.signature(forward).parameters.values() if p.name in optional]
    for p in params:
        kind = KIND.get(p.name.lower())
        if kind in ROTARY and not spec.rotary:  # a lesson that turns nothing: the caller's rotation by angle 0
            kind = f"still_{kind}"
        if kind is None:
            known = ", ".join(ns[0] for ns in TABLE.values() if ns)
            said = Message(
                "trouble.forward_requires", module=_name(module), param=p.name, lesson=spec.name, known=known
            )
            raise InputError(said)
        out[p.name] = kind
    return out


def _name(module: Any) -> str:
    return type(module).__name__ if isinstance(module, torch.nn.Module) else str(getattr(module, "__name__", module))


RANKS = (2, 3, 4)
"""The shapes a caller may give the mask in: ``(T, T)``, ``(1, T, T)`` (the Annotated Transformer's
``subsequent_mask``, which the layer widens with ``unsqueeze(1)``), ``(1, 1, T, T)``; each of the last two
also with the batch as its first axis (``batched``: Hugging Face's ``(b, 1, T, T)``)."""


class Mask(NamedTuple):
    """How the further arguments are passed where callers differ: the mask's form (:data:`MASKS`), its number
    of axes (0: the lesson's) and whether the first is the batch's, the parameters with a default that get it
    all the same (a mask the code leaves to its caller), and the form of each rotary table that has several
    (``(parameter, kind)`` pairs, :data:`ALTERNATIVES`); and whether the tokens go in sequence first."""

    form: str = "mask"
    rank: int = 0
    optional: tuple[str, ...] = ()
    batched: bool = False
    tables: tuple[tuple[str, str], ...] = ()
    seq_first: bool = False  # the tokens go in sequence first, (T, b, d), and the result comes back so


LESSON = Mask()
"""The lesson's own way: an additive mask in the lesson's shape, passed only where ``forward`` requires one."""


def kind_of(kind: str, mask: Mask, name: str) -> str:
    """The kind passed to parameter ``name``, asked for as ``kind``, under the choice ``mask``."""
    if kind == "mask":
        return mask.form
    return dict(mask.tables).get(name, kind)


def width(spec: Spec, d_out: int | None = None, heads: int | None = None) -> int:
    """The rotary tables' ``d``: one head's width, ``d_out / heads`` (of a rebuilt module: its own sizes)."""
    return (d_out if d_out is not None else spec.d_out) // (heads or spec.heads or 1)


Arguments = Callable[[torch.Tensor], tuple[tuple[Any, ...], dict[str, Any]]]
"""The positional and keyword arguments of one call on the tokens ``x`` (``x`` first)."""


def bind(
    module: Any,
    spec: Spec,
    d: int | None = None,
    mask: Mask = LESSON,
    heads: int | None = None,
    window: int | None = None,
) -> tuple[Arguments | None, dict[str, str]]:
    """How to call ``module`` on the tokens (None: ``forward(x)``), and what it is given beyond them (name -> kind).

    ``mask`` says how every mask is passed (its form, one of :data:`MASKS`,
    its shape, and the optional mask parameters given it: the choice made
    for this module by :func:`.maskforms.choose`).

    The further arguments are made for each call's ``x`` (a shorter sequence
    gets a shorter mask), before the call and so outside its capture, and
    passed by position where they can be, so the capture names them after
    the student's parameters.
    """
    given = {name: kind_of(kind, mask, name) for name, kind in kinds(module, spec, mask.optional).items()}
    if not given and not mask.seq_first:
        return None, {}
    params = inspect.signature(getattr(module, "forward", module)).parameters
    rot = width(spec, d, heads)

    def arguments(x: torch.Tensor) -> tuple[tuple[Any, ...], dict[str, Any]]:
        args: list[Any] = [_sequence_first(x) if mask.seq_first else x]
        kwargs: dict[str, Any] = {}
        for name, kind in given.items():
            got = value(kind, x, spec, rot, mask.rank, mask.batched, window)
            if mask.seq_first and kind in ALL_MASKS and isinstance(got, torch.Tensor) and got.ndim > 2:
                got = got.movedim((-2, -1), (0, 1)).contiguous()  # its broadcast axes after the tokens', as x's batch
            if params[name].kind is inspect.Parameter.KEYWORD_ONLY or name in mask.optional:  # by name: past defaults
                kwargs[name] = got
            else:
                args.append(got)
        return tuple(args), kwargs

    if not mask.seq_first:
        return arguments, given
    first = next(iter(params), "x")
    return SequenceFirst(arguments), {first: "sequence_first", **given}


class SequenceFirst:
    """The arguments of a call whose tokens go in sequence first, ``(T, b, d)``; :attr:`seq_first` tells the caller
    to read the result back batch first (:func:`.student.batch_first`)."""

    seq_first = True

    def __init__(self, arguments: Arguments) -> None:
        self._arguments = arguments

    def __call__(self, x: torch.Tensor) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return self._arguments(x)


def _sequence_first(x: torch.Tensor) -> torch.Tensor:
    """The tokens ``(b, T, d)`` as ``(T, b, d)``, laid out afresh (as a sequence-first caller's tensor is)."""
    return x.transpose(0, 1).contiguous() if x.ndim == 3 else x
