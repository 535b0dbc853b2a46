"""Lesson ``rope``: rotary position embeddings (RoFormer; Llama, Mistral, Qwen, GPT-NeoX), then causal attention.

The tutorial's six tokens are projected to ``d_out = 4`` (lesson
trainable's weights: ``torch.manual_seed(123)``, three ``torch.rand(3, 4)``),
since RoPE rotates *pairs* of components and needs an even width.  Token
``i`` sits at position ``m = i − 1``; pair ``p`` turns at the frequency
``θ_p = base^(−2(p−1)/d)`` (``base`` 10000, correctly rounded:
:func:`tracer.core.trig.frequencies`), so by the angle ``m θ_p``, whose cos
and sin are correctly rounded too (:mod:`tracer.core.trig`): the same bits on
every CPU.  Queries and keys are rotated (values never are), the scores are
the dot products of the rotated vectors, and the rest is the causal
lesson's: -inf above the diagonal, divided by sqrt(d_k), softmax, context.

Then what the lesson proves:

- ``shift``: both positions moved by ``offset`` give the same scores, within
  the bound :func:`tracer.lessons.rope.rotary.bound` derives (the
  ``bound`` of ``check.shift``, which holds the residual): a score depends
  only on ``m − n``;
- ``other``: the other convention (interleaved, unless ``style`` is) on the
  same queries and keys rotates other pairs, so its scores differ
  (``check.other``);
- ``perm``: with the projections' columns permuted (``perm.W_query``),
  the interleaved rotation gives the half-split one's numbers exactly, in
  the permuted order (``check.perm.q`` and ``check.perm.k`` are 0), and
  the same scores up to the order of a sum (``check.perm``, within its
  ``bound``).

Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from tracer.core import bounds, trig
from tracer.core.ids import index_expr
from tracer.core.trace import Ref, Trace
from tracer.errors import InputError
from tracer.lessons.rope import backward
from tracer.lessons.rope.rotary import STYLES, angles, bound, rotate, scores
from tracer.message import Message
from tracer.record import weights as wts
from tracer.record.blocks.attention import context
from tracer.record.blocks.backward import Backward
from tracer.record.blocks.masks import causal_masks, masked_softmax
from tracer.record.blocks.projections import inputs_and_weights, projections, sqrt_dk
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "projections", "rope", "scores", "normalize", "context", "shift", "other", "perm")
BASE = 10000.0
OFFSET = 100
"""The default shift of both positions: far enough that the angles are new, not a multiple of 2π."""
D_OUT = 4
CAUSAL = r"\alpha^{\mathrm{causal}}"
OTHER = {"half": "interleaved", "interleaved": "half"}
"""Stage ``other`` rotates with the convention the main line does not use."""


def prepare(
    values: torch.Tensor,
    weights: str = "rand",
    d_out: int = D_OUT,
    base: float = BASE,
    offset: int = OFFSET,
    style: str = "half",
    **unknown: Any,
) -> dict[str, Any]:
    """Lesson trainable's weights, ``d_out`` wide (even), and a validated base and offset."""
    if unknown:
        raise InputError(Message("lessons.takes_no_option", name=repr("rope"), unknown=", ".join(sorted(unknown))))
    if isinstance(d_out, bool) or not isinstance(d_out, int) or d_out < 2 or d_out % 2:
        raise InputError(Message("options.must_even_rope_rotates", d_out=repr(d_out)), arg="d_out")
    if isinstance(base, bool) or not isinstance(base, int | float) or not math.isfinite(base) or base <= 1:
        raise InputError(Message("options.must_finite_number_above", base=repr(base)), arg="base")
    if isinstance(offset, bool) or not isinstance(offset, int) or abs(offset) > 2**20:
        raise InputError(Message("options.must_whole_number_positions", offset=repr(offset)), arg="offset")
    if style not in STYLES:
        raise InputError(Message("options.must_one", styles=", ".join(STYLES), style=repr(style)), arg="style")
    built, info = wts.choose(weights, int(values.shape[1]), d_out, int(values.shape[0]))
    if int(built["W_query"].shape[1]) % 2:
        raise InputError(Message("options.rope_rotates_pairs_components"))
    return {"weights": built, "weights_meta": info, "base": float(base), "offset": offset, "style": style}


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    weights: dict[str, torch.Tensor],
    weights_meta: dict[str, Any],
    base: float = BASE,
    offset: int = OFFSET,
    style: str = "half",
    backward_pass: Backward | None = None,
) -> Trace:
    """Run the lesson (with ``backward_pass``, the gradients of its context vectors too)."""
    rec = Recorder(dtype)
    t = int(inputs.shape[0])
    x, w = inputs_and_weights(rec, inputs, weights)
    q, k, v = projections(rec, x, w)
    d = int(q.data.shape[1])
    with rec.stage("rope"):
        pos = rec.input("rope.pos", torch.arange(t), "i", symbol=r"m_{<i>}", text="<i> − 1")
        theta = rec.input(
            "rope.theta",
            torch.from_numpy(trig.frequencies(base, d, np.dtype(str(dtype).removeprefix("torch.")))),
            "p",
            symbol=r"\theta_{<p>}",
            text=f"{base:g} ** (−2 (<p> − 1) / {d})",
        )
        angle, cos, sin = angles(rec, "rope.", pos, theta)
        rq = rotate(rec, "rope.q", q, cos, sin, style, "q")
        rk = rotate(rec, "rope.k", k, cos, sin, style, "k")
    with rec.stage("scores"):
        omega = scores(rec, "omega", rq, rk)
        root = sqrt_dk(rec, rk)
    with rec.stage("normalize"):
        _tri, up = causal_masks(rec, t)
        alpha = masked_softmax(rec, omega, up, root, weights=CAUSAL)
    with rec.stage("context"):
        z = context(rec, "z", alpha, v, ())
    with rec.stage("shift"):
        _shift(rec, pos, theta, (q, k), (rq, rk), angle, omega, offset, style)
    other = OTHER[style]
    with rec.stage("other"):
        oq = rotate(rec, "other.q", q, cos, sin, other, "q")
        ok = rotate(rec, "other.k", k, cos, sin, other, "k")
        alt = scores(rec, "other.omega", oq, ok)
        rec.maxabsdiff(
            "check.other",
            alt,
            omega,
            latex=r"\max \lvert \omega^{\mathrm{other}} - \omega \rvert",
            text="max |other.omega − omega|",
        )
    with rec.stage("perm"):
        _perm(rec, x, w, (rq, rk), (cos, sin), omega, other)
    info = {"lesson": "rope", "tokens": tokens, "query": query, "stages": list(STAGES)}
    rope = {"base": base, "offset": offset, "style": style, "d": d}
    if backward_pass is not None:
        parts = {"rq": rq, "rk": rk, "v": v, "cos": cos, "sin": sin, "root": root, "up": up, "alpha": alpha, "z": z}
        info["backward"] = backward.record(rec, x, w, parts, style, backward_pass)
    return rec.trace({**meta, **info, "weights": weights_meta, "rope": rope})


def _shift(
    rec: Recorder,
    pos: Var,
    theta: Var,
    qk: tuple[Var, Var],
    rot: tuple[Var, Var],
    angle: Var,
    omega: Var,
    offset: int,
    style: str,
) -> None:
    """Both positions moved by ``offset``: the same scores, within the bound of the two computations' rounding."""
    off = rec.constant("shift.offset", float(offset), symbol=r"\Delta", text=f"the shift of every position, {offset}")
    moved = rec.elementwise(
        "add",
        "shift.pos",
        [pos("i"), off()],
        "i",
        symbol=r"m'_{<i>}",
        latex=r"m'_{<i>} = m_{<i>} + \Delta",
        text="rope.pos[<i>] + shift.offset",
    )
    s_angle, s_cos, s_sin = angles(rec, "shift.", moved, theta, r"\phi'")
    q, k = qk
    sq = rotate(rec, "shift.q", q, s_cos, s_sin, style, "q")
    sk = rotate(rec, "shift.k", k, s_cos, s_sin, style, "k")
    moved_omega = scores(rec, "shift.omega", sq, sk)
    rq, rk = rot
    limit = bound(q, k, rq, rk, angle, style) + bound(q, k, sq, sk, s_angle, style)
    rec.maxabsdiff(
        "check.shift",
        moved_omega,
        omega,
        latex=r"\max \lvert \omega' - \omega \rvert",
        text="max |shift.omega − omega|",
        bound=limit,
        traced=True,
    )


def _perm(
    rec: Recorder, x: Var, w: dict[str, Var], rot: tuple[Var, Var], trig_: tuple[Var, Var], omega: Var, other: str
) -> None:
    """The projections' columns permuted so that the other convention's pairs are this one's: the same rotations."""
    d = int(w["W_query"].data.shape[1])
    h = d // 2
    # half-split to interleaved: component c of the permuted layout is component π(c): 2p-1 <- p, 2p <- p + d/2
    to_il = f"(c+1)//2+(1-c%2)*{h}"
    to_half = f"2*c-1-{2 * h - 1}*((c-1)//{h})"  # and back, π⁻¹: p <- 2p-1, p + d/2 <- 2p
    pick, back = (to_il, to_half) if other == "interleaved" else (to_half, to_il)
    order = [_at(pick, c) - 1 for c in range(1, d + 1)]
    inverse = [_at(back, c) - 1 for c in range(1, d + 1)]
    syms = {"W_query": "W^{Q}", "W_key": "W^{K}"}
    pw = {}
    for name, sym in syms.items():
        pw[name] = rec.apply(
            "getitem",
            f"perm.{name}",
            w[name].data[:, order].contiguous(),
            [Ref(w[name].name, ("k", pick))],
            "kc",
            symbol=rf"\bar {sym}_{{<k,c>}}",
            latex=rf"\bar {sym}_{{<k,c>}} = {sym}_{{<k>,\pi(<c>)}}",
            text=f"{name}[<k>,π(<c>)]",
        )
    cos, sin = trig_
    rotated = []
    for (letter, name), mine in zip((("q", "W_query"), ("k", "W_key")), rot, strict=True):
        proj = rec.contract(
            f"perm.{letter}",
            x("i", "k"),
            pw[name]("k", "c"),
            "ick",
            "k",
            symbol=rf"\bar {letter}^{{(<i>)}}_{{<c>}}",
            latex=rf"\bar {letter}^{{(<i>)}}_{{<c>}} = \sum_k x^{{(<i>)}}_k \bar {syms[name]}_{{k<c>}}",
            text=f"Σ_k x[<i>,k] × perm.{name}[k,<c>]",
        )
        turned = rotate(rec, f"perm.r{letter}", proj, cos, sin, other, rf"\bar {letter}")
        rotated.append(turned)
        again = rec.apply(
            "getitem",
            f"perm.back.{letter}",
            turned.data[:, inverse].contiguous(),
            [Ref(turned.name, ("i", back))],
            "ic",
            symbol=rf"\hat {{\bar {letter}}}^{{(<i>)}}_{{\pi^{{-1}}(<c>)}}",
            latex=rf"\hat {{\bar {letter}}}^{{(<i>)}}_{{\pi^{{-1}}(<c>)}}",
            text=f"perm.r{letter}[<i>,π⁻¹(<c>)]",
        )
        rec.maxabsdiff(
            f"check.perm.{letter}",
            again,
            mine,
            latex=rf"\max \lvert \hat {{\bar {letter}}}_{{\pi^{{-1}}(c)}} - \hat {letter}_c \rvert",
            text=f"max |perm.back.{letter} − rope.{letter}|",
        )
    permuted = scores(rec, "perm.omega", rotated[0], rotated[1])
    # the same d products, added in another order: each sum within γ_{d-1} Σ|p| of the exact one
    mags = [np.abs(r.data.double().numpy()) for r in rot]
    u = bounds.unit(str(rec.dtype).removeprefix("torch."))
    limit = 2 * bounds.gamma(d - 1, u) * (mags[0] @ mags[1].T) * (1 + 1e-9)
    rec.maxabsdiff(
        "check.perm",
        permuted,
        omega,
        latex=r"\max \lvert \bar\omega - \omega \rvert",
        text="max |perm.omega − omega|",
        bound=limit,
        traced=True,
    )


def _at(expr: str, c: int) -> int:
    """The 1-based component an index expression of ``c`` names (the trace's own arithmetic)."""
    got = index_expr(expr)({"c": c})
    assert got is not None
    return int(got)
