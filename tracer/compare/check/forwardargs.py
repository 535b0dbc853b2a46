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
- rotary tables (lesson rope only): ``cos`` and ``sin`` of ``m θ_p`` with
  the lesson's ``θ_p = 10000^(−2(p−1)/d)``, ``(b, T, d)`` laid out for the
  checked ``--rope-style`` (``half``: Hugging Face's ``cat(freqs, freqs)``;
  ``interleaved``: each angle twice, ``repeat_interleave``);
  ``position_embeddings`` the pair ``(cos, sin)``; ``freqs_cis`` Meta's
  complex ``e^(i m θ_p)``, ``(T, d/2)``, whatever the style (the pairing is
  the code's own reshape);
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

from tracer.compare.check.lessons import Spec
from tracer.compare.check.resizeref import BASE
from tracer.errors import InputError
from tracer.message import Message

TABLE: dict[str, tuple[str, ...]] = {
    "position_ids": ("position_ids", "pos_ids"),
    "positions": ("positions", "input_pos", "cache_position", "pos_tensor", "token_positions"),
    "start": ("start_pos", "start", "pos", "offset", "past_length", "past_len", "cur_pos", "n_past", "seqlen_offset"),
    "cos": ("cos",),
    "sin": ("sin",),
    "cos_sin": ("position_embeddings", "cos_sin", "rotary_pos_emb", "rope_cache"),
    "freqs_cis": ("freqs_cis", "freqs_complex", "freq_cis"),
    "mask": ("mask", "attn_mask", "attention_mask", "causal_mask", "attn_bias"),
    "mask_keep": (),  # a mask's other forms: never asked for by name, chosen by trying (:mod:`.maskforms`)
    "mask_hide": (),
    "tokens": ("key", "value", "keys", "values", "k", "v"),
    "true": ("is_causal", "causal"),
    "false": ("use_cache", "output_attentions", "need_weights", "return_attention", "return_weights"),
    "none": (
        "past_key_value", "past_key_values", "layer_past", "kv_cache", "cache", "past",
        "key_padding_mask", "padding_mask", "head_mask",
    ),
}  # fmt: skip
"""Kind -> the parameter names (lower case) that take it."""

KIND = {name: kind for kind, names in TABLE.items() for name in names}
ROTARY = ("cos", "sin", "cos_sin", "freqs_cis")
GROUPS = {
    "positions": ("position_ids", "positions", "start"),
    "rotary": ROTARY,
    "mask": ("mask",),
    "mask_keep": ("mask_keep",),
    "mask_hide": ("mask_hide",),
    "flags": ("true", "false", "none"),
    "tokens": ("tokens",),
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
        if kind in ROTARY and not spec.rotary:
            kind = None
        if kind is None:
            known = ", ".join(ns[0] for k, ns in TABLE.items() if ns and (k not in ROTARY or spec.rotary))
            said = Message(
                "trouble.forward_requires", module=_name(module), param=p.name, lesson=spec.name, known=known
            )
            raise InputError(said)
        out[p.name] = kind
    return out


def _name(module: Any) -> str:
    return type(module).__name__ if isinstance(module, torch.nn.Module) else str(getattr(module, "__name__", module))


def value(kind: str, x: torch.Tensor, spec: Spec, width: int, rank: int = 0) -> Any:
    """The value of ``kind`` for a call on ``x`` (``(b, T, d_in)`` or ``(T, d_in)``); ``width``: the rotary's ``d``,
    ``rank``: the mask's number of axes (0: the lesson's)."""
    t = int(x.shape[-2])
    lead = tuple(int(n) for n in x.shape[:-2])
    at = torch.arange(t)
    if kind == "position_ids":
        return at.expand(*lead, t).clone()
    if kind == "positions":
        return at
    if kind == "start":
        return 0
    if kind in ROTARY:
        return _rotary(kind, at, lead, spec.style or "half", width, x.dtype)
    if kind in MASKS:
        return _mask(kind, t, x.dtype, spec.multi, rank)
    if kind == "tokens":  # self-attention: the keys and values come from the same tokens as the queries
        return x
    return {"true": True, "false": False, "none": None}[kind]


MASKS = ("mask", "mask_keep", "mask_hide")
"""The causal mask's forms, in the order they are tried: additive float, boolean keep, boolean hide."""

RANKS = (2, 3, 4)
"""The shapes a caller may give the mask in: ``(T, T)``, ``(1, T, T)`` (the Annotated Transformer's
``subsequent_mask``, which the layer widens with ``unsqueeze(1)``), ``(1, 1, T, T)``."""


class Mask(NamedTuple):
    """How a mask is passed: its form (:data:`MASKS`), its number of axes (0: the lesson's), and the
    parameters with a default that get it all the same (a mask the code leaves to its caller)."""

    form: str = "mask"
    rank: int = 0
    optional: tuple[str, ...] = ()


LESSON = Mask()
"""The lesson's own way: an additive mask in the lesson's shape, passed only where ``forward`` requires one."""


def _mask(kind: str, t: int, dtype: torch.dtype, multi: bool, rank: int = 0) -> torch.Tensor:
    """The causal mask over ``t`` tokens in form ``kind``, ``(T, T)`` or, for the multi-head lessons, ``(1, 1, T, T)``;
    with ``rank``, ``(T, T)`` behind ``rank − 2`` leading axes of one.

    ``mask``: 0 where token i may attend and −inf above the diagonal (to be
    added); ``mask_keep``: True where it may attend, on and below the
    diagonal (the Annotated Transformer's ``subsequent_mask``, read by
    ``masked_fill(mask == 0, …)``); ``mask_hide``: True above the diagonal
    (torch's boolean ``attn_mask`` of hidden places, ``masked_fill(mask, …)``).
    """
    hide = torch.ones(t, t, dtype=torch.bool).triu(1)
    cut = {"mask": torch.zeros(t, t, dtype=dtype).masked_fill(hide, float("-inf")), "mask_keep": ~hide}.get(kind, hide)
    rank = rank or (4 if multi else 2)
    return cut.view(*(1,) * (rank - 2), t, t)


def _rotary(kind: str, at: torch.Tensor, lead: tuple[int, ...], style: str, d: int, dtype: torch.dtype) -> Any:
    """``cos``, ``sin``, the pair, or ``freqs_cis`` of ``m θ_p`` for positions ``at`` (from 0)."""
    theta = BASE ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)
    angle = at.to(torch.float64)[:, None] * theta[None, :]
    if kind == "freqs_cis":
        return torch.polar(torch.ones_like(angle), angle).to(torch.complex64)
    wide = torch.cat((angle, angle), dim=-1) if style == "half" else angle.repeat_interleave(2, dim=-1)
    cos, sin = (f(wide).to(dtype).expand(*lead, *wide.shape).clone() for f in (torch.cos, torch.sin))
    return {"cos": cos, "sin": sin, "cos_sin": (cos, sin)}[kind]


def width(spec: Spec, d_out: int | None = None) -> int:
    """The rotary tables' ``d``: lesson rope's one head is ``d_out`` wide (``d_out`` of a rebuilt module)."""
    return d_out if d_out is not None else spec.d_out


Arguments = Callable[[torch.Tensor], tuple[tuple[Any, ...], dict[str, Any]]]
"""The positional and keyword arguments of one call on the tokens ``x`` (``x`` first)."""


def bind(module: Any, spec: Spec, d: int | None = None, mask: Mask = LESSON) -> tuple[Arguments | None, dict[str, str]]:
    """How to call ``module`` on the tokens (None: ``forward(x)``), and what it is given beyond them (name -> kind).

    ``mask`` says how every mask is passed (its form, one of :data:`MASKS`,
    its shape, and the optional mask parameters given it: the choice made
    for this module by :func:`.maskforms.choose`).

    The further arguments are made for each call's ``x`` (a shorter sequence
    gets a shorter mask), before the call and so outside its capture, and
    passed by position where they can be, so the capture names them after
    the student's parameters.
    """
    given = {name: mask.form if kind == "mask" else kind for name, kind in kinds(module, spec, mask.optional).items()}
    if not given:
        return None, {}
    params = inspect.signature(getattr(module, "forward", module)).parameters
    rot = width(spec, d)

    def arguments(x: torch.Tensor) -> tuple[tuple[Any, ...], dict[str, Any]]:
        args: list[Any] = [x]
        kwargs: dict[str, Any] = {}
        for name, kind in given.items():
            got = value(kind, x, spec, rot, mask.rank)
            if params[name].kind is inspect.Parameter.KEYWORD_ONLY or name in mask.optional:  # by name: past defaults
                kwargs[name] = got
            else:
                args.append(got)
        return tuple(args), kwargs

    return arguments, given
