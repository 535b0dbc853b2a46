"""The backward pass of attention, scalar by scalar, from the same traced primitives as the forward.

The gradient of a node ``N`` (of a loss L, through the lesson's output) is
the node ``dN``: ``dalpha[2,1]`` is ∂L/∂alpha[2,1].  Every block here is one
rule of the chain rule, recorded as products, running sums and elementwise
steps, so that ``verify`` recomputes each gradient from its inputs and
``explain`` writes it as a teacher would.  For ``z = alpha v``,
``alpha = softmax(s)`` and ``s = q·k`` (optionally scaled and masked):

* through the weighted sum: ``dalpha[i,j] = Σ_c dz[i,c] v[j,c]`` (dP = dO Vᵀ)
  and ``dv[j,c] = Σ_i alpha[i,j] dz[i,c]`` (dV = Pᵀ dO);
* through the softmax, per row: the row sum ``ds.dot[i] = Σ_j alpha[i,j]
  dalpha[i,j]`` is its own step (the term students forget), then
  ``ds.shift = dalpha − ds.dot`` and ``ds = alpha × ds.shift``;
* through the scores: ``dq[i,c] = Σ_j ds[i,j] k[j,c]`` (dQ = dS K) and
  ``dk[j,c] = Σ_i ds[i,j] q[i,c]`` (dK = dSᵀ Q);
* through a projection ``q = x W``: ``dW[k,c] = Σ_i x[i,k] dq[i,c]`` and the
  path of the gradient back to the inputs ``dx.query[i,k] = Σ_c dq[i,c] W[k,c]``;
* the inputs' gradient is the sum of every path that reads them.

Gradients are written with a bar in LaTeX (``\\bar\\alpha_{ij}`` is
∂L/∂α_ij, the adjoint notation of automatic differentiation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tracer.core.ids import rename
from tracer.errors import InputError
from tracer.record.blocks.attention import P, r
from tracer.record.recorder import Arg, Recorder, Var

HALF_SQUARE = "half_square"
"""The default loss: L = ½ Σ z², whose gradient of each output entry is that entry (∂L/∂z = z)."""
GIVEN = "given"
"""The loss of an upstream gradient the user gave (``--grad-output``): L = Σ z ⊙ dz for that dz."""


@dataclass(frozen=True)
class Backward:
    """What a lesson's ``build`` is asked when its backward pass is wanted.

    ``given`` is the upstream gradient of the lesson's output as a float64
    array (already a finite 2-d table), or ``None`` for the default loss
    L = ½ Σ z², whose gradient is the output itself.
    """

    given: np.ndarray | None = None

    @property
    def loss(self) -> str:
        """Which loss the upstream gradient is the gradient of (:data:`HALF_SQUARE` or :data:`GIVEN`)."""
        return HALF_SQUARE if self.given is None else GIVEN


def gradient_array(given: Any) -> np.ndarray:
    """An upstream gradient given by a user (nested lists, numpy, torch) as a finite float64 array, or an
    :class:`~tracer.errors.InputError` saying what is wrong with it.  Any number of axes: the output of a
    lesson with a batch or heads has three; the lesson checks the shape against its output's."""
    if hasattr(given, "detach"):  # a torch tensor
        given = given.detach().cpu().numpy()
    if isinstance(given, np.ndarray):
        if given.dtype.kind not in "iuf":
            raise InputError(f"must be numbers, got an array of {given.dtype}")
        arr = given.astype(np.float64)
    else:
        if not isinstance(given, (list, tuple)):
            raise InputError(f"must be nested lists of numbers or an array, got {type(given).__name__}")
        try:
            arr = np.asarray(given, dtype=np.float64)
        except (ValueError, TypeError):
            raise InputError("must be nested lists of numbers, every row as long as the others") from None
    if arr.ndim == 0 or arr.size == 0:
        raise InputError(f"is empty or a single number (shape {arr.shape}), not a table")
    if not np.isfinite(arr).all():
        at = tuple(int(n) + 1 for n in np.argwhere(~np.isfinite(arr))[0])
        raise InputError(f"the value at {list(at)} is {arr[tuple(n - 1 for n in at)]}: it must be finite")
    return arr


def bar(symbol: str) -> str:
    """The LaTeX of a gradient: ``\\alpha_{<i,j>}`` -> ``\\bar{\\alpha}_{<i,j>}`` (the bar over the letter)."""
    cut = min((n for n in (symbol.find("^"), symbol.find("_")) if n > 0), default=len(symbol))
    return rf"\bar{{{symbol[:cut]}}}{symbol[cut:]}"


def upstream(rec: Recorder, out: Var, back: Backward, sym: str) -> Var:
    """Record the upstream gradient ``d<out>`` as an input: the default loss's (``out`` itself) or the given one.

    A given gradient must have the output's shape; anything else is an
    :class:`~tracer.errors.InputError` naming both shapes.
    """
    name = f"d{out.name}"
    if back.given is None:
        value = out.data.clone()
        text = f"{r(out.name, *P(out.axes))} (L = ½ Σ {out.name}²)"
    else:
        want = tuple(out.data.shape)
        if tuple(back.given.shape) != want:
            got = " x ".join(map(str, back.given.shape))
            raise InputError(
                f"the upstream gradient has shape {got}; the output {out.name} has shape {' x '.join(map(str, want))}"
            )
        value = torch.from_numpy(np.ascontiguousarray(back.given)).to(rec.dtype)
        text = f"given ∂L/∂{r(out.name, *P(out.axes))}"
    return rec.input(name, value, out.axes, symbol=bar(sym), text=text)


def meta(out: Var, grad: Var, back: Backward, stages: Sequence[str], inputs: Sequence[str]) -> dict[str, Any]:
    """``trace.meta["backward"]``: the output differentiated, the upstream gradient's node, the loss, the stages."""
    return {
        "output": out.name,
        "upstream": grad.name,
        "loss": back.loss,
        "stages": list(stages),
        "gradients": list(inputs),
    }


def products(rec: Recorder, name: str, a: Arg, b: Arg, axes: tuple[str, ...], over: str, sym: str) -> Var:
    """``name = Σ_over a × b``, every product and running sum a step, its formulas written from the operands.

    The LaTeX reads each operand's element symbol (:attr:`Arg.symbol`) with
    the summed axis as a primed letter, the summation index of this
    project's formulas (``\\sum_{c'} \\bar{z}^{(2)}_{c'}\\, v^{(1)}_{c'}``);
    the plain text names the operands' nodes (``Σ_c dz[2,c] × v[1,c]``).
    """
    o, p = over, f"{over}'"

    def txt(arg: Arg, at: str) -> str:
        return r(arg.var.name, *(at if x == o else f"<{x}>" for x in arg.index))

    def tex(arg: Arg, at: str) -> str:
        return rename(arg.symbol, {o: at})

    return rec.contract(
        name,
        a,
        b,
        axes,
        o,
        symbol=sym,
        latex=rf"{sym} = \sum_{{{p}}} {tex(a, p)}\, {tex(b, p)}",
        text=f"Σ_{o} {txt(a, o)} × {txt(b, o)}",
        part_latex=(rf"{a.symbol}\, {b.symbol}", rf"\sum_{{{p}=1}}^{{<{o}>}} {tex(a, p)}\, {tex(b, p)}"),
        part_text=(f"{txt(a, f'<{o}>')} × {txt(b, f'<{o}>')}", f"Σ_{{m≤<{o}>}} {txt(a, 'm')} × {txt(b, 'm')}"),
    )


def through_weighted_sum(
    rec: Recorder, dz: Var, alpha: Var, v: Var, lead: tuple[str, ...], dalpha: str, dv: str, vsym: str = "v"
) -> tuple[Var, Var]:
    """``dalpha[i,j] = Σ_c dz[i,c] v[j,c]`` (dP = dO Vᵀ) and ``dv[j,c] = Σ_i alpha[i,j] dz[i,c]`` (dV = Pᵀ dO).

    ``vsym`` is the letter of the values (``x`` in a lesson whose values are its inputs).
    """
    vl = v.axes[:-2]
    ga = products(
        rec, dalpha, dz(*lead, "i", "c"), v(*vl, "j", "c"), (*lead, "i", "j", "c"), "c", bar(r"\alpha_{<i,j>}")
    )
    sym = bar(rf"{vsym}^{{(<j>)}}_{{<c>}}")
    gv = products(rec, dv, alpha(*lead, "i", "j"), dz(*lead, "i", "c"), (*lead, "j", "c", "i"), "i", sym)
    return ga, gv


def through_softmax(rec: Recorder, alpha: Var, dalpha: Var, ds: str, sym: str) -> Var:
    """``ds[i,j] = alpha[i,j] (dalpha[i,j] − Σ_k alpha[i,k] dalpha[i,k])``, the row sum its own step ``<ds>.dot``.

    ``sym`` is the LaTeX of one entry of the softmax's input (``\\omega_{<i,j>}``).
    A weight that is exactly 0 (a masked key) gets a gradient of exactly 0
    (or −0) here: the factor alpha[i,j] is 0.
    """
    ax = alpha.axes
    head, a, g = P(ax[:-1]), alpha.name, dalpha.name
    dot = products(rec, f"{ds}.dot", alpha(*ax), dalpha(*ax), ax, ax[-1], r"\rho_{<i>}")
    shift = rec.elementwise(
        "sub",
        f"{ds}.shift",
        [dalpha(*ax), dot(*ax[:-1])],
        ax,
        symbol=rf"{dalpha.symbol} - \rho_{{<i>}}",
        latex=rf"{dalpha.symbol} - \rho_{{<i>}}",
        text=f"{r(g, *P(ax))} − {r(dot.name, *head)}",
    )
    k = ax[-1]
    row = rename(alpha.symbol, {k: "k'"}) + r"\, " + rename(dalpha.symbol, {k: "k'"})
    return rec.elementwise(
        "mul",
        ds,
        [alpha(*ax), shift(*ax)],
        ax,
        symbol=bar(sym),
        latex=bar(sym) + rf" = {alpha.symbol} \left({dalpha.symbol} - \sum_{{k'}} {row}\right)",
        text=f"{r(a, *P(ax))}·({r(g, *P(ax))} − Σ_k {r(a, *head, 'k')}·{r(g, *head, 'k')})",
    )


def through_scores(
    rec: Recorder, ds: Var, q: Var, k: Var, lead: tuple[str, ...], dq: str, dk: str, qsym: str = "q", ksym: str = "k"
) -> tuple[Var, Var]:
    """``dq[i,c] = Σ_j ds[i,j] k[j,c]`` (dQ = dS K) and ``dk[j,c] = Σ_i ds[i,j] q[i,c]`` (dK = dSᵀ Q)."""
    ql, kl = q.axes[:-2], k.axes[:-2]
    qs, ks = bar(rf"{qsym}^{{(<i>)}}_{{<c>}}"), bar(rf"{ksym}^{{(<j>)}}_{{<c>}}")
    gq = products(rec, dq, ds(*lead, "i", "j"), k(*kl, "j", "c"), (*lead, "i", "c", "j"), "j", qs)
    gk = products(rec, dk, ds(*lead, "i", "j"), q(*ql, "i", "c"), (*lead, "j", "c", "i"), "i", ks)
    return gq, gk


def through_projection(
    rec: Recorder, x: Var, w: Var, dq: Var, path: str, wsym: str, qsym: str = "q", lead: tuple[str, ...] = ()
) -> tuple[Var, Var]:
    """For ``q = x W``: ``dW[k,c] = Σ_i x[i,k] dq[i,c]`` and the path ``dx.<path>[i,k] = Σ_c dq[i,c] W[k,c]``.

    ``qsym`` is the letter of the projection (``q``, ``k`` or ``v``); an
    empty ``path`` names the input's gradient ``d<x>`` (x read by one path only).  With
    ``lead`` axes (a batch ``b``), one weight serves every batch entry, so
    its gradient sums over them too: first over the tokens of each entry
    (``dW.per[b,k,c]``), then over the entries, one running sum each.
    """
    wsum = bar(rf"{wsym}_{{<k,c>}}")
    over = (*lead, "k", "c", "i")
    if not lead:
        gw = products(rec, f"d{w.name}", x("i", "k"), dq("i", "c"), over, "i", wsum)
    else:
        per = rf"{wsum}^{{(<{lead[0]}>)}}"
        part = products(rec, f"d{w.name}.per", x(*lead, "i", "k"), dq(*lead, "i", "c"), over, "i", per)
        b = lead[0]
        gw = summed(rec, f"d{w.name}", part, (b, "k", "c"), (b, "k", "c"), b, wsum)
    sym = rf"\bar{{x}}^{{(<i>)\,\mathrm{{{path}}}}}_{{<k>}}" if path else bar(x.symbol)
    name = f"d{x.name}.{path}" if path else f"d{x.name}"
    gx = products(rec, name, dq(*lead, "i", "c"), w("k", "c"), (*lead, "i", "k", "c"), "c", sym)
    return gw, gx


def bias(rec: Recorder, name: str, dy: Var, sym: str) -> Var:
    """For ``y = o + b`` with one bias ``b[c]`` added at every batch entry and token: ``db[c] = Σ_b Σ_i dy[b,i,c]``.

    The addition passes ``dy`` back to ``o`` unchanged (its gradient is
    ``dy`` itself); the bias, read at every ``(b, i)``, sums them: first
    over the tokens of each entry (``<name>.per[b,c]``), then over the entries.
    """
    b, i, c = dy.axes
    per = summed(rec, f"{name}.per", dy, (b, i, c), (b, c, i), i, rf"{bar(sym)}^{{(<{b}>)}}")
    return summed(rec, name, per, (b, c), (b, c), b, bar(sym))


def summed(
    rec: Recorder, name: str, part: Var, index: tuple[str, ...], axes: tuple[str, ...], over: str, sym: str
) -> Var:
    """``name = Σ_over part``: one node's entries added along one axis, each running sum a step.

    ``index`` names ``part``'s axes, ``axes`` the running sums' (``over``
    among them, anywhere); the result has ``axes`` without ``over``.  A
    gradient read at every batch entry, token or head sums them this way
    (``dsplit.b_out.per[b,c]`` = Σ_i ``dsplit.out[b,i,c]``).
    """
    prime = rename(part.symbol, {over: f"{over}'"})

    def at(to: str) -> str:
        return r(part.name, *(to if x == over else f"<{x}>" for x in index))

    return rec.contract(
        name,
        part(*index),
        None,
        axes,
        over,
        symbol=sym,
        latex=rf"{sym} = \sum_{{{over}'}} " + prime,
        text=f"Σ_{over} {at(over)}",
        part_latex=("", rf"\sum_{{{over}'=1}}^{{<{over}>}} " + prime),
        part_text=("", f"Σ_{{m≤<{over}>}} {at('m')}"),
    )


def sum_paths(rec: Recorder, name: str, paths: Sequence[Var], sym: str) -> Var:
    """The gradient of a node several paths read: their sum, left to right, one addition per step.

    With paths ``dx.query``, ``dx.key``, ``dx.value`` the steps are
    ``dx.query_key = dx.query + dx.key`` and ``dx = dx.query_key + dx.value``.
    """
    ax = paths[0].axes
    acc, done = paths[0], [paths[0].name.rpartition(".")[2]]
    for n, nxt in enumerate(paths[1:], 2):
        done.append(nxt.name.rpartition(".")[2])
        last = n == len(paths)
        out = name if last else f"{name}.{'_'.join(done)}"
        acc = rec.elementwise(
            "add",
            out,
            [acc(*ax), nxt(*ax)],
            ax,
            symbol=bar(sym) if last else out,
            latex=(bar(sym) + " = " if last else "") + " + ".join(rf"\bar{{x}}^{{\mathrm{{{p}}}}}" for p in done),
            text=f"{r(acc.name, *P(ax))} + {r(nxt.name, *P(ax))}",
        )
    return acc


def rescaled(rec: Recorder, name: str, grad: Var, by: Var, op: str, sym: str, why: str) -> Var:
    """``name = grad <op> by`` entry by entry (``op`` ``mul`` or ``div``): a scale or a mask passed back unchanged."""
    ax = grad.axes
    sign = "×" if op == "mul" else "/"
    by_ref = by(*ax) if by.axes else by()
    by_text = r(by.name, *P(ax)) if by.axes else by.name
    return rec.elementwise(
        op,
        name,
        [grad(*ax), by_ref],
        ax,
        symbol=bar(sym),
        latex=bar(sym) + " = " + why,
        text=f"{r(grad.name, *P(ax))} {sign} {by_text}",
    )


def masked_out(rec: Recorder, name: str, grad: Var, hidden: Var, sym: str) -> Var:
    """The gradient through ``masked_fill(s, hidden, −inf)``: a hidden score's gradient is exactly 0.

    The filled entries are a constant (−∞) that does not depend on the
    score, so nothing flows back to it: ``masked_fill(grad, hidden, 0)``.
    """
    ax = grad.axes
    return rec.elementwise(
        "masked_fill",
        name,
        [grad(*ax), hidden(*ax[len(ax) - len(hidden.axes) :])],  # the mask's axes are the gradient's last ones
        ax,
        symbol=bar(sym),
        latex=bar(sym) + r" = \begin{cases}\bar\omega^{-\infty}_{<i,j>} & \text{kept}\\ 0 & \text{masked}\end{cases}",
        text=f"{r(grad.name, *P(ax))} unless masked, then 0",
        fill=0.0,
    )
