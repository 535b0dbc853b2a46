"""The causal mask as recorded inputs, and the softmax of scores filled with -inf where a mask hides a key."""

from __future__ import annotations

import torch

from tracer.record.blocks.attention import stable_softmax
from tracer.record.recorder import Recorder, Var

CAUSAL = r"\alpha^{\mathrm{causal}}"
"""The letter of the masked softmax's weights (a lesson's plain ``alpha`` are the weights before masking)."""


def causal_masks(rec: Recorder, t: int, lead: tuple[str, ...] = ()) -> tuple[Var, Var]:
    """The lower-triangular keep mask and the upper-triangular fill mask, as recorded inputs."""
    tril = torch.tril(torch.ones(t, t))
    tri = rec.input("mask.tril", tril, "ij", symbol=r"M_{<i,j>}", text="1 if <j> ≤ <i> else 0")
    up = rec.input("mask.triu", 1 - tril, "ij", symbol=r"U_{<i,j>}", text="1 if <j> > <i> else 0")
    return tri, up


CAUSAL_RULE: tuple[str, str, tuple[str, ...]] = (r"<j> \le <i>", r"<j> > <i>", ("<j> > <i>",))
"""When a key is seen, when it is hidden (LaTeX), and the hidden cases as text (any of them hides): the causal
mask's rule.  The cases are recorded as the masked node's ``unless`` so that each language joins them in its
own words (:func:`tracer.present.explain.equation`)."""


def masked_softmax(
    rec: Recorder,
    omega: Var,
    up: Var,
    root: Var,
    pre: str = "",
    weights: str = r"\alpha",
    *,
    soft: str | None = None,
    rule: tuple[str, str, tuple[str, ...]] = CAUSAL_RULE,
) -> Var:
    """Fill the scores where ``up`` is 1 with -inf, scale, softmax: the masked weights, named ``weights``.

    ``up`` is the causal lesson's upper triangle unless ``rule`` says which
    keys it hides (lesson window's band); the softmax's nodes are
    ``<soft>.max`` … ``<soft>.alpha`` (default ``<pre>causal``).
    """
    axes = omega.axes
    seen, hidden, hidden_text = rule
    soft = f"{pre}causal" if soft is None else soft
    plain, tilde = r"\omega_{<i,j>}", r"\tilde\omega^{-\infty}_{<i,j>}"  # a score, and the masked, scaled one
    kept = f"{pre}omega[{','.join(f'<{a}>' for a in axes)}]"
    neg = rec.elementwise(
        "masked_fill",
        f"{pre}neg.omega",
        [omega(*axes), up("i", "j")],
        axes,
        symbol=r"\omega^{-\infty}_{<i,j>}",
        latex=rf"\omega^{{-\infty}}_{{<i,j>}} = \begin{{cases}}{plain} & {seen}\\ -\infty & {hidden}\end{{cases}}",
        text=f"{kept} unless {' or '.join(hidden_text)}, then -inf",
        kept=kept,
        unless=hidden_text,
    )
    scaled = rec.elementwise(
        "div",
        f"{pre}neg.scaled",
        [neg(*axes), root()],
        axes,
        symbol=tilde,
        latex=rf"{tilde} = \omega^{{-\infty}}_{{<i,j>}} / \sqrt{{d_k}}",
        text=f"{pre}neg.omega[{','.join(f'<{a}>' for a in axes)}] / {root.name}",
    )
    return stable_softmax(rec, scaled, tilde, out=f"{soft}.alpha", prefix=soft, weights=weights)
