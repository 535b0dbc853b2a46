"""The values the check passes a ``forward`` beyond the tokens, one per kind of :data:`.forwardargs.TABLE`.

Each is what the lesson itself would use for a call on ``T`` tokens, in the
form the code's own callers give it:

- positions from 0 (``position_ids`` one row per sample; ``positions`` one
  row; ``start`` the int 0);
- rotary tables of ``m θ_p`` (``θ_p = 10000^(−2(p−1)/d)``): full width
  ``(b, T, d)`` laid out for the checked pairing (``cos``, ``sin``, the pair
  ``cos_sin`` as Hugging Face's model hands it down), half width
  ``(1, T, 1, d/2)`` (``cos_sin_half``, nanochat's pair), Meta's complex
  ``freqs_cis`` ``(T, d/2)``, gpt-fast's real pairs ``(T, d/2, 2)``
  (``freqs_pairs``), llama2.c's ``freqs_cos`` and ``freqs_sin`` ``(T, d/2)``.
  For a lesson that turns nothing, the same tables at angle 0 (the kinds
  ``still_*``): a layer that leaves the rotation to its caller then computes
  the lesson's attention, and its rotation is an identity, as the note says;
- the mask in three forms (additive, boolean keep, boolean hide), over the
  causal past or, for a lesson with a window, over the window's band (the
  ``_band`` forms: the mask a windowed model's caller builds), ``(T, T)``
  behind leading axes of one, or of the batch (``(b, 1, T, T)``, Hugging
  Face's eager layers);
- ``valid_lens``: d2l's lengths, ``i + 1`` for query row ``i`` of each sample,
  how its decoder masks causally;
- the tokens themselves for ``key`` and ``value``; flags True, False, None.
"""

from __future__ import annotations

from typing import Any

import torch

from tracer.compare.check.lessons import Spec
from tracer.compare.check.resizeref import BASE

ROTARY = ("cos", "sin", "cos_sin", "cos_sin_half", "freqs_cis", "freqs_pairs", "freqs_cos", "freqs_sin")
"""The rotary tables' kinds (each also ``still_<kind>``: the same table at angle 0)."""
STILL = tuple(f"still_{k}" for k in ROTARY)
FORMS = ("mask", "mask_keep", "mask_hide")
"""The mask's forms, in the order they are tried: additive float, boolean keep, boolean hide."""
MASKS = (*FORMS, *(f"{m}_band" for m in FORMS))
"""Every mask kind: each form over the causal past, then over a window's band."""


def value(
    kind: str,
    x: torch.Tensor,
    spec: Spec,
    width: int,
    rank: int = 0,
    batched: bool = False,
    window: int | None = None,
) -> Any:
    """The value of ``kind`` for a call on ``x`` (``(b, T, d_in)`` or ``(T, d_in)``).

    ``width``: the rotary tables' ``d`` (one head's); ``rank``: the mask's
    number of axes (0: the lesson's), ``batched``: its first axis the batch's
    rather than one; ``window``: the band of a ``_band`` mask (default the
    lesson's window).
    """
    t = int(x.shape[-2])
    lead = tuple(int(n) for n in x.shape[:-2])
    at = torch.arange(t)
    if kind == "position_ids":
        return at.expand(*lead, t).clone()
    if kind == "positions":
        return at
    if kind == "start":
        return 0
    if kind == "valid_lens":
        return (at + 1).expand(*lead, t).clone()
    if kind in ROTARY or kind in STILL:
        still = kind.startswith("still_")
        return _rotary(kind.removeprefix("still_"), at, lead, spec.style or "half", width, x.dtype, still)
    if kind in MASKS:
        band = window if window is not None else spec.window
        return _mask(kind, t, x.dtype, spec.multi, rank, lead[0] if batched and lead else 0, band)
    if kind == "tokens":  # self-attention: the keys and values come from the same tokens as the queries
        return x
    return {"true": True, "false": False, "none": None}[kind]


def _mask(kind: str, t: int, dtype: torch.dtype, multi: bool, rank: int, batch: int, window: int) -> torch.Tensor:
    """The mask over ``t`` tokens in form ``kind``, ``(T, T)`` or, for the multi-head lessons, ``(1, 1, T, T)``;
    with ``rank``, ``(T, T)`` behind ``rank − 2`` leading axes of one (the first the batch's when ``batch``).

    ``mask``: 0 where token i may attend and −inf elsewhere (to be added);
    ``mask_keep``: True where it may attend (the Annotated Transformer's
    ``subsequent_mask``, read by ``masked_fill(mask == 0, …)``);
    ``mask_hide``: True where it may not (torch's boolean ``attn_mask`` of
    hidden places, ``masked_fill(mask, …)``).  Where it may attend: on and
    below the diagonal, and (``_band``) fewer than ``window`` tokens back.
    """
    hide = torch.ones(t, t, dtype=torch.bool).triu(1)
    if kind.endswith("_band") and window:
        hide |= torch.ones(t, t, dtype=torch.bool).tril(-window)
    form = kind.removesuffix("_band")
    cut = {"mask": torch.zeros(t, t, dtype=dtype).masked_fill(hide, float("-inf")), "mask_keep": ~hide}.get(form, hide)
    rank = rank or (4 if multi else 2)
    shaped = cut.view(*(1,) * (rank - 2), t, t)
    return shaped.expand(batch, *shaped.shape[1:]).clone() if batch and rank > 2 else shaped


def _rotary(
    kind: str, at: torch.Tensor, lead: tuple[int, ...], style: str, d: int, dtype: torch.dtype, still: bool
) -> Any:
    """The table ``kind`` of ``m θ_p`` for positions ``at`` (from 0); ``still``: every angle 0."""
    theta = BASE ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)
    angle = at.to(torch.float64)[:, None] * theta[None, :] * (0.0 if still else 1.0)
    if kind == "freqs_cis":
        return torch.polar(torch.ones_like(angle), angle).to(torch.complex64)
    if kind == "freqs_pairs":
        return torch.stack((angle.cos(), angle.sin()), dim=-1).to(dtype)
    if kind in ("freqs_cos", "freqs_sin"):
        return (angle.cos() if kind == "freqs_cos" else angle.sin()).to(dtype)
    if kind == "cos_sin_half":
        return tuple(f(angle).to(dtype)[None, :, None, :].clone() for f in (torch.cos, torch.sin))
    wide = torch.cat((angle, angle), dim=-1) if style == "half" else angle.repeat_interleave(2, dim=-1)
    cos, sin = (f(wide).to(dtype).expand(*lead, *wide.shape).clone() for f in (torch.cos, torch.sin))
    return {"cos": cos, "sin": sin, "cos_sin": (cos, sin)}[kind]
