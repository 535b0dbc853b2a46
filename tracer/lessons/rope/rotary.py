"""Rotary position embeddings as traced steps: the angles, their cos and sin, and each rotated pair.

RoPE turns the components of a query or key into ``d/2`` pairs and rotates
pair ``p`` of the token at position ``m`` by the angle ``m θ_p``:

    x' = x cos(m θ_p) − y sin(m θ_p)
    y' = y cos(m θ_p) + x sin(m θ_p)

Which components make a pair is the *convention*: ``half`` pairs component
``p`` with ``p + d/2`` (Hugging Face's ``rotate_half``, GPT-NeoX, Llama in
transformers), ``interleaved`` pairs ``2p − 1`` with ``2p`` (RoFormer,
GPT-J, Meta's original Llama with complex numbers).  Each pair member is
recorded as a copy of the component it reads (``getitem`` with the index
arithmetic of its convention), so the trace says which component went where;
the rotated vector is put back in the same layout (``cat``).

:func:`bound` is how far two such rotations of the same vectors may move a
score by float rounding: the lesson's proof that a score depends only on
``m − n`` (see its derivation there).
"""

from __future__ import annotations

import numpy as np
import torch

from tracer.core import bounds
from tracer.core.trace import Ref
from tracer.record.recorder import Recorder, Var

STYLES = ("half", "interleaved")
"""The two pairing conventions; ``half`` is the lesson's main line, as in most code today."""


def members(style: str, half: int) -> tuple[str, str]:
    """Index arithmetic of pair ``p``'s two members among components 1..2·half (1-based)."""
    return ("p", f"p+{half}") if style == "half" else ("2*p-1", "2*p")


def layout(style: str, half: int) -> tuple[str, str]:
    """How component ``c`` of the rotated vector reads the rotated members (out of range: the other one)."""
    if style == "half":
        return "c", f"c-{half}"
    d = 2 * half
    return f"(c+1)//2+(1-c%2)*{d}", f"c//2+(c%2)*{d}"


def angles(rec: Recorder, pre: str, pos: Var, theta: Var, sym: str = r"\phi") -> tuple[Var, Var, Var]:
    """``<pre>angle[i,p] = pos[i] · theta[p]``, and its cos and sin (correctly rounded: the same bits everywhere)."""
    angle = rec.elementwise(
        "mul",
        f"{pre}angle",
        [pos("i"), theta("p")],
        "ip",
        symbol=rf"{sym}_{{<i>,<p>}}",
        latex=rf"{sym}_{{<i>,<p>}} = {pos.symbol} \, \theta_{{<p>}}",
        text=f"{pos.name}[<i>] × {theta.name}[<p>]",
    )
    c, s = (
        rec.elementwise(
            f,
            f"{pre}{f}",
            [angle("i", "p")],
            "ip",
            symbol=rf"\{f} {sym}_{{<i>,<p>}}",
            latex=rf"\{f} {sym}_{{<i>,<p>}}",
            text=f"{f} {angle.name}[<i>,<p>]",
        )
        for f in ("cos", "sin")
    )
    return angle, c, s


def rotate(rec: Recorder, name: str, vec: Var, cos: Var, sin: Var, style: str, letter: str, back: str = "") -> Var:
    """Rotate every pair of ``vec[i,c]`` by its angle: ``name.x``, ``name.y`` … ``name.rx``, ``name.ry``, ``name``.

    ``letter`` is the vector's LaTeX letter (``q``, ``k``); the rotated one is
    written with a hat.  A ``back`` letter (``\\bar q``) transposes the
    rotation (turns it by −φ): ``x' = x cos φ + y sin φ``, ``y' = y cos φ −
    x sin φ``, the backward pass of a rotation, which takes the gradient of
    the rotated vector (``vec``, letter ``\\bar{\\hat q}``) to the gradient of
    the vector itself, written ``back``.
    """
    half = int(vec.data.shape[1]) // 2
    ix, iy = members(style, half)
    sym = {m: rf"{letter}^{{(<i>)}}_{{{m},<p>}}" for m in ("x", "y")}
    pair = {}
    for member, index in (("x", ix), ("y", iy)):
        shown = index.replace("*", " ").replace("p", "<p>")  # "2*p-1" -> "2 <p>-1"
        pair[member] = rec.apply(
            "getitem",
            f"{name}.{member}",
            vec.data[:, columns(style, member, half)].contiguous(),
            [Ref(vec.name, ("i", index))],
            "ip",
            symbol=sym[member],
            latex=rf"{sym[member]} = {letter}^{{(<i>)}}_{{{shown}}}",
            text=f"{vec.name}[<i>,{index.replace('p', '<p>')}]",
        )
    x, y = pair["x"], pair["y"]

    def prod(part: str, a: Var, b: Var, fn: str) -> Var:
        return rec.elementwise(
            "mul",
            f"{name}.{part}",
            [a("i", "p"), b("i", "p")],
            "ip",
            symbol=rf"{a.symbol} \{fn} \phi_{{<i>,<p>}}",
            latex=rf"{a.symbol} \{fn} \phi_{{<i>,<p>}}",
            text=f"{a.name}[<i>,<p>] × {b.name}[<i>,<p>]",
        )

    xc, ys = prod("xcos", x, cos, "cos"), prod("ysin", y, sin, "sin")
    yc, xs = prod("ycos", y, cos, "cos"), prod("xsin", x, sin, "sin")
    out, top = (back, r"^{\top}") if back else (rf"\hat {letter}", "")
    hat = {m: rf"{out}^{{(<i>)}}_{{{m},<p>}}" for m in ("x", "y")}
    (rx_op, rx_sign, rx_text), (ry_op, ry_sign, ry_text) = (("sub", "-", "−"), ("add", "+", "+"))[:: -1 if back else 1]
    rx = rec.elementwise(
        rx_op,
        f"{name}.rx",
        [xc("i", "p"), ys("i", "p")],
        "ip",
        symbol=hat["x"],
        latex=rf"{hat['x']} = {sym['x']} \cos \phi_{{<i>,<p>}} {rx_sign} {sym['y']} \sin \phi_{{<i>,<p>}}",
        text=f"{xc.name}[<i>,<p>] {rx_text} {ys.name}[<i>,<p>]",
    )
    ry = rec.elementwise(
        ry_op,
        f"{name}.ry",
        [yc("i", "p"), xs("i", "p")],
        "ip",
        symbol=hat["y"],
        latex=rf"{hat['y']} = {sym['y']} \cos \phi_{{<i>,<p>}} {ry_sign} {sym['x']} \sin \phi_{{<i>,<p>}}",
        text=f"{yc.name}[<i>,<p>] {ry_text} {xs.name}[<i>,<p>]",
    )
    lx, ly = layout(style, half)
    full = torch.empty_like(vec.data)
    full[:, columns(style, "x", half)] = rx.data
    full[:, columns(style, "y", half)] = ry.data
    return rec.apply(
        "cat",
        name,
        full,
        [Ref(rx.name, ("i", lx)), Ref(ry.name, ("i", ly))],
        "ic",
        symbol=rf"{out}^{{(<i>)}}_{{<c>}}",
        latex=rf"{out}^{{(<i>)}} = R_{{m_{{<i>}}}}{top}\, {letter}^{{(<i>)}}",
        text=f"{rx.name} and {ry.name} back in the {style} layout",
    )


def columns(style: str, member: str, half: int) -> list[int]:
    """The 0-based components that hold member ``x`` or ``y`` of pairs 1..half (as :func:`members` reads them)."""
    if style == "half":
        return list(range(half)) if member == "x" else list(range(half, 2 * half))
    return list(range(0, 2 * half, 2)) if member == "x" else list(range(1, 2 * half, 2))


def scores(rec: Recorder, name: str, q: Var, k: Var) -> Var:
    """``name[i,j] = q̂(i) · k̂(j)`` over the rotated components, every product and running sum recorded."""
    return rec.contract(
        name,
        q("i", "c"),
        k("j", "c"),
        "ijc",
        "c",
        symbol=r"\omega_{<i,j>}",
        latex=r"\omega_{<i,j>} = \hat q^{(<i>)} \cdot \hat k^{(<j>)}",
        text=f"{q.name}[<i>]·{k.name}[<j>]",
        part_latex=(
            r"\hat q^{(<i>)}_{<c>}\, \hat k^{(<j>)}_{<c>}",
            r"\sum_{m=1}^{<c>} \hat q^{(<i>)}_{m}\, \hat k^{(<j>)}_{m}",
        ),
        part_text=(f"{q.name}[<i>,<c>] × {k.name}[<j>,<c>]", f"Σ_{{m≤<c>}} {q.name}[<i>,m] × {k.name}[<j>,m]"),
    )


def bound(q: Var, k: Var, rq: Var, rk: Var, angle: Var, style: str) -> np.ndarray:
    """How far a traced score ``q̂(i)·k̂(j)`` may be from the exact one of the exact rotations, entry by entry.

    With ``u`` the unit roundoff and ``φ̂`` a recorded angle (the float
    product of an exact position and the float ``θ̂_p``), the exact angle
    ``φ = m θ̂_p`` is within ``u |φ̂| (1 + 2u)`` of it, so the correctly
    rounded cos and sin are each within ``a = u + u |φ̂| (1 + 2u)`` of
    ``cos φ`` and ``sin φ``; the two products and the difference (or sum)
    add ``γ₂ (|x| + |y|)``.  Each rotated component is thus within
    ``E = (|x| + |y|)(a + γ₂)`` of the exact rotation.  The score, summed left
    to right over ``d`` products, adds ``γ_d Σ|q̂ k̂|``, and the rotations'
    errors ``Σ E_q |k̂| + (|q̂| + E_q) E_k``.  Two rotations whose exact
    scores are equal (both positions shifted) are within the sum of their
    two bounds.
    """
    u = bounds.unit(str(q.data.dtype).removeprefix("torch."))
    half = int(q.data.shape[1]) // 2
    ix, iy = columns(style, "x", half), columns(style, "y", half)
    phi = np.abs(angle.data.double().numpy())
    a = u + u * phi * (1 + 2 * u)
    g2 = bounds.gamma(2, u)

    def err(v: Var) -> np.ndarray:
        x = v.data.double().numpy()
        e_pair = (np.abs(x[:, ix]) + np.abs(x[:, iy])) * (a + g2)
        out = np.empty_like(x)
        out[:, ix], out[:, iy] = e_pair, e_pair
        return out

    eq, ek = err(q), err(k)
    hq, hk = np.abs(rq.data.double().numpy()), np.abs(rk.data.double().numpy())
    d = int(q.data.shape[1])
    total: np.ndarray = bounds.gamma(d, u) * (hq @ hk.T) + eq @ hk.T + (hq + eq) @ ek.T
    return total * (1 + 1e-9)  # the float64 arithmetic of the bound itself, generously
