"""Dropout and ``F.scaled_dot_product_attention``, decomposed as their documentation states.

Dropout in training mode draws a keep-mask from torch's random generator.
The handler re-draws it from the state the generator had just before the
call (on a tensor of ones of the same shape and type, which consumes the
same draws), puts the generator back where torch left it, and records
``N.keep`` (1 kept, 0 dropped), ``N.kept`` (input × keep), ``N.scale`` =
1/(1−p) and ``N`` (torch's result, kept × scale).  With ``p = 0`` or in
evaluation mode dropout changes nothing and records nothing.

SDPA is ``dropout(softmax(q kᵀ · scale + mask)) v``: ``N.scores``
(products and running sums), ``N.scale``, ``N.scaled``, the mask
(``N.causal`` for ``is_causal``, ``N.masked``), the stable softmax
(``N.weights.*``; a query the mask left no key gets weights 0 as in torch's
kernels, ``N.blind`` and ``N.weights.safe``: :mod:`.blind`), with ``dropout_p > 0`` the mask torch drew on the weights
(``N.drop``, ``N.dropped``, ``N.dscale``, ``N.weights.dropped``), and ``N`` = torch's own output with the products and
running sums of ``weights @ v``; ``check.N`` compares torch's fused kernel
with that left-to-right form.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tracer.core import bounds
from tracer.core.trace import Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops.blind import blind
from tracer.record.capture.ops.common import Call, Unsupported, check, magnitude, sums_bound, unit
from tracer.record.capture.ops.reduce import stable
from tracer.record.capture.session import Session
from tracer.record.recorder import Var


def dropout(s: Session, c: Call) -> None:
    """``F.dropout``/``nn.Dropout``: an alias when it changes nothing, else mask, kept entries and scale."""
    x, out = c.args[0], c.out
    p = float(c.arg(1, "p", 0.5))
    training = bool(c.arg(2, "training", True)) if c.key == "dropout" else True
    vx = s.var(x)
    if p == 0.0 or not training:
        s.bind(out, vx)
        return
    if c.rng is None or bool(c.arg(3, "inplace", False)):
        raise Unsupported("dropout without a known random state")
    keep = _redraw(c.rng, x, p)
    nz = x != 0
    if not torch.equal((out != 0) & nz, keep & nz):
        raise Unsupported("dropout mask could not be re-drawn")
    name, _ = s.begin("dropout", vx.name)
    names = vx.axes
    kept, scale = _masked(s, vx, keep, p, (f"{name}.keep", f"{name}.kept", f"{name}.scale"), "entry", ("x B", "x"))
    v = s.rec.apply(
        "mul",
        name,
        out,
        [Ref(kept.name, names), Ref(scale.name, ())],
        names,
        latex=r"\frac{x \cdot B}{1-p}",
        text=f"{ax.ref_text(kept.name, names)} × {scale.name}",
        attrs={"library": "dropout", "p": p},
    )
    s.bind(out, v)


def _drop(s: Session, name: str, w: Var, p: float, rng: torch.Tensor, out: torch.Tensor, v: torch.Tensor) -> Var:
    """SDPA's dropout of the attention weights: the keep-mask torch drew, re-drawn as :func:`dropout` does.

    Torch's math kernel drops the weights with ``dropout(weights, p, True)``
    after the softmax, so the same generator state gives the same mask; the
    mask is checked by recomputing the output from it (a fused kernel that
    drew otherwise is an opaque step instead).
    """
    keep = _redraw(rng, w.data, p)
    again = (w.data * keep * (1.0 / (1.0 - p))) @ v
    if not torch.allclose(again, out, rtol=1e-4, atol=1e-6):
        raise Unsupported("SDPA's dropout mask could not be re-drawn")
    names = w.axes
    kept, const = _masked(
        s, w, keep, p, (f"{name}.drop", f"{name}.dropped", f"{name}.dscale"), "weight", ("a B", r"\alpha")
    )
    return s.rec.elementwise(
        "mul",
        f"{name}.weights.dropped",
        [kept(*names), const()],
        names,
        symbol=r"\tilde\alpha",
        latex=r"\frac{\alpha \cdot B}{1-p}",
        text=f"{ax.ref_text(kept.name, names)} × {const.name}",
    )


def _redraw(rng: torch.Tensor, like: torch.Tensor, p: float) -> torch.Tensor:
    """The keep-mask dropout drew from generator state ``rng`` (True: kept), leaving the generator as it was."""
    after = torch.get_rng_state()
    try:
        torch.set_rng_state(rng)
        return torch.nn.functional.dropout(torch.ones_like(like), p, True) != 0
    finally:
        torch.set_rng_state(after)


def _masked(
    s: Session, x: Var, keep: torch.Tensor, p: float, ids: tuple[str, str, str], what: str, sym: tuple[str, str]
) -> tuple[Var, Var]:
    """Record the keep-mask ``B`` (ids[0]), ``x · B`` (ids[1]) and the constant 1/(1−p) (ids[2]) for dropout of ``x``.

    ``what`` names an entry in the mask's text; ``sym`` is the product's plain symbol and ``x``'s LaTeX.
    """
    names = x.axes
    mask = s.rec.input(
        ids[0],
        keep.to(x.data.dtype),
        names,
        symbol="B",
        text=f"1 if torch kept {what} {ax.placeholders(names)} else 0",
        attrs={"made_by": f"dropout(p={p:g}) draw"},
    )
    kept = s.rec.elementwise(
        "mul",
        ids[1],
        [x(*names), mask(*names)],
        names,
        symbol=sym[0],
        latex=rf"{sym[1]} \cdot B",
        text=f"{ax.ref_text(x.name, names)} × {ax.ref_text(mask.name, names)}",
    )
    scale = s.rec.apply(
        "const", ids[2], torch.tensor(1.0 / (1.0 - p), dtype=x.data.dtype), [], (), text=f"1 / (1 − {p:g})"
    )
    return kept, scale


def sdpa(s: Session, c: Call) -> None:
    """``F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale)``."""
    q, k, v = c.arg(0, "query"), c.arg(1, "key"), c.arg(2, "value")
    mask, p = c.arg(3, "attn_mask"), float(c.arg(4, "dropout_p", 0.0))
    causal, scale = bool(c.arg(5, "is_causal", False)), c.arg(6, "scale")
    out: torch.Tensor = c.out
    gqa = bool(c.kwargs.get("enable_gqa"))
    batched = q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
    if q.dim() < (3 if gqa else 2) or not (batched or gqa):
        raise Unsupported("SDPA with broadcast batches")
    if p != 0.0 and c.rng is None:
        raise Unsupported("SDPA dropout without a known random state")
    vq, vk, vv = s.var(q), s.var(k), s.var(v)
    name, _ = s.begin("sdpa")
    if gqa:
        vk, vv = _grouped(s, name, q, k, vk, "k"), _grouped(s, name, q, v, vv, "v")
    lead = vq.axes[:-2]
    i = vq.axes[-2]
    j = ax.fresh([*lead, i], ("j",))
    e = ax.fresh([*lead, i, j], ("c", "d"))
    f = ax.fresh([*lead, i, j], ("d", "c", "e"))
    sc = s.rec.contract(
        f"{name}.scores",
        vq(*lead, i, e),
        vk(*lead, j, e),
        (*lead, i, j, e),
        e,
        symbol=rf"\mathrm{{{name}.scores}}",
        latex=rf"\mathrm{{{name}.scores}} = \sum_{{{e}}} \mathrm{{{vq.name}}}\, \mathrm{{{vk.name}}}",
        text=f"Σ_{e} {ax.ref_text(vq.name, (*lead, i, e))} × {ax.ref_text(vk.name, (*lead, j, e))}",
    )
    factor = float(scale) if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    const = s.rec.apply("const", f"{name}.scale", torch.tensor(factor, dtype=out.dtype), [], (), text=f"{factor:g}")
    names = (*lead, i, j)
    cur = s.rec.elementwise(
        "mul",
        f"{name}.scaled",
        [sc(*names), const()],
        names,
        symbol=rf"\mathrm{{{name}.scaled}}",
        latex=rf"\mathrm{{{name}.scaled}} = \mathrm{{{name}.scores}} \cdot {factor:g}",
        text=f"{ax.ref_text(sc.name, names)} × {const.name}",
    )
    t, tk = int(q.shape[-2]), int(k.shape[-2])
    if causal:
        up = torch.ones(t, tk, dtype=torch.bool).triu(1)
        m = s.rec.input(f"{name}.causal", up.to(out.dtype), (i, j), symbol="U", text=f"1 if <{j}> > <{i}> else 0")
        cur = s.rec.elementwise(
            "masked_fill", f"{name}.masked", [cur(*names), m(i, j)], names, symbol="", latex="", text=""
        )
    if isinstance(mask, torch.Tensor):
        vm = s.read(mask, names, tuple(cur.data.shape))
        if mask.dtype == torch.bool:
            own = vm.var(*vm.var.axes)  # the mask in its own axes: the node ``hide`` has those
            hide = s.rec.apply("not", f"{name}.hide", (~mask).to(out.dtype), [own.ref], vm.var.axes, text="not mask")
            cur = s.rec.elementwise(
                "masked_fill", f"{name}.masked_by", [cur(*names), hide(*vm.index)], names, symbol="", latex="", text=""
            )
        else:
            cur = s.rec.elementwise("add", f"{name}.biased", [cur(*names), vm], names, symbol="", latex="", text="")
    err = _score_bound(s, f"{name}.scores.p", factor, cur, mask)
    weights = stable(s, f"{name}.weights", cur, j)
    err = _weights_bound(weights, cur, err, unit(out.dtype))
    safe = blind(s, name, weights, out, j)
    if safe is not weights:  # a query with every key hidden: weights exactly 0, as torch gave them
        err = np.where(np.isnan(weights.data.numpy()), 0.0, err)
        weights = safe
    if p != 0.0 and c.rng is not None:
        weights = _drop(s, name, weights, p, c.rng, out, vv.data)
        dropped = err * s.rec.data(f"{name}.drop")
        err = bounds.scaled(weights.data.double().numpy(), dropped, 1.0 - p, unit(out.dtype))
    ctx = s.rec.contract(
        name,
        weights(*lead, i, j),
        vv(*lead, j, f),
        (*lead, i, f, j),
        j,
        symbol=rf"\mathrm{{{name}}}",
        latex=rf"\mathrm{{{name}}} = \sum_{{{j}}} \mathrm{{{weights.name}}}\, \mathrm{{{vv.name}}}",
        text=f"Σ_{j} {ax.ref_text(weights.name, names)} × {ax.ref_text(vv.name, (*lead, j, f))}",
        parts=("t", "s"),
        total=out.detach().clone(),
        attrs={"library": "scaled_dot_product_attention", "causal": causal, "scale": factor, "dropout_p": p},
    )
    s.bind(out, ctx)
    lead_letters = "ABCDEFGH"[: len(lead)]
    spec = f"{lead_letters}ij,{lead_letters}jf->{lead_letters}if"
    w64, v64 = weights.data.double().numpy(), vv.data.detach().double().numpy()
    bound = bounds.matmul(spec, w64, err, v64, np.zeros(()), unit(out.dtype))
    check(s, name, ctx, s.rec.value(f"{name}.s", last=j), f"{name}.s", f"{name}.s left to right", bound)


def _grouped(s: Session, name: str, q: torch.Tensor, x: torch.Tensor, vx: Var, which: str) -> Var:
    """SDPA's ``enable_gqa``: key/value heads repeated for the query heads, as torch does (``repeat_interleave``).

    Head ``h`` of the queries reads head ``(h-1)//r+1`` of ``x``, with
    ``r`` = query heads / key-value heads; the node is ``N.k``/``N.v`` under the
    name the SDPA call will take, each entry a copy.
    """
    hq, hx = int(q.shape[-3]), int(x.shape[-3])
    if hx == 0 or hq % hx or q.shape[:-3] != x.shape[:-3]:
        raise Unsupported("SDPA with grouped heads that do not divide the query heads")
    r = hq // hx
    wide = x.detach().repeat_interleave(r, dim=-3)
    exprs = [f"({a}-1)//{r}+1" if n == x.dim() - 3 else a for n, a in enumerate(vx.axes)]
    refs = [Ref(vx.name, tuple(exprs))]
    return s.rec.apply("repeat_interleave", f"{name}.{which}", wide, refs, vx.axes, text=ax.ref_text(vx.name, exprs))


def _score_bound(s: Session, products: str, factor: float, cur: Var, mask: object) -> np.ndarray:
    """How far the kernel's scaled (and masked) scores may be from ours: its own order of ``q · k``, then the scale."""
    dtype = cur.data.dtype
    terms = s.rec.data(products)
    raw = sums_bound(magnitude(terms, -1), int(terms.shape[-1]), dtype)
    e = bounds.scaled(cur.data.double().numpy(), raw, 1.0 / factor, unit(dtype))
    if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool:  # a float mask is added after the scale
        x = np.abs(cur.data.double().numpy())
        e = e * (1 + unit(dtype)) + 2 * unit(dtype) * np.where(np.isfinite(x), x, 0.0)
    return e


def _weights_bound(w: Var, x: Var, e: np.ndarray, u: float) -> np.ndarray:
    """How far the kernel's attention weights may be from our stable softmax ``w`` of ``x``.

    :func:`tracer.core.bounds.softmax` for inputs within ``e``, and one more
    rounding of each weight for every block of keys a fused kernel's online
    softmax rescales its running sums by (``exp`` of the change of the row
    maximum, 20 units in the last place, and a product), counting blocks of
    at least 32 keys.
    """
    c, xs = w.data.double().numpy(), x.data.double().numpy()
    base = bounds.softmax(c, xs, e, -1, u)
    blocks = -(-int(c.shape[-1]) // 32)
    extra = bounds.gamma(blocks * int(2 * bounds.LIBRARY_EXP_ULPS + 3), u)
    with np.errstate(all="ignore"):
        return base + np.where(np.isfinite(c), extra * np.abs(c) * (1 + extra), 0.0)
