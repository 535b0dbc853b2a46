"""Lesson ``flash``: FlashAttention's online softmax, one block of keys at a time.

The causal lesson's attention (``torch.manual_seed(789)``, bias-free
``nn.Linear`` query, key and value, scores scaled by sqrt(d_k)) computed the
way FlashAttention computes it: the keys and values are cut into blocks of
``B`` (the last one shorter when B does not divide T, its missing keys made
zero and hidden), and each query walks through the blocks keeping three
things only: the running max ``m``, the running sum ``l`` of exponentials
and the accumulator ``o`` of exponential-weighted values.  When a block
raises the max, what was accumulated so far is rescaled by
``c = e^(m_old - m_new)``; after the last block ``z = o / l``.  The weight
matrix is never formed.

Axes: ``i`` the query, ``u`` the block, ``j`` a key's place in its block
(key ``(u-1)·B + j``), ``c`` a component.  A running quantity reads its own
value at the previous block (``u-1``); before the first block ``m = -inf``,
``l = 0`` and ``o = 0`` (``attrs["start"]``); ``l`` and ``o`` are op
``rescale_add``, ``prev × c + new`` rounded twice (a multiplication, then an
addition), as the loop computes them.  Stage ``ordinary`` computes
the causal lesson's softmax and context vectors from the same scores, and
``check.flash`` the largest difference, with the rounding bound of
:mod:`tracer.lessons.flash.flashbound`.  Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from tracer.core.trace import Ref, Trace
from tracer.errors import InputError
from tracer.lessons.flash import backward
from tracer.lessons.flash.flashbound import flash_bound
from tracer.message import Message
from tracer.record import weights as wts
from tracer.record.blocks.attention import context, row_sum, scores
from tracer.record.blocks.backward import Backward
from tracer.record.blocks.masks import CAUSAL, causal_masks, masked_softmax
from tracer.record.blocks.projections import inputs_and_weights, projections, sqrt_dk
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "projections", "blocks", "online", "ordinary", "reverse")
BLOCK = 2
"""The default block size B: three blocks on the tutorial's six tokens, so the running max can change twice."""


def prepare(values: torch.Tensor, block: int = BLOCK, d_out: int = 2, **unknown: Any) -> dict[str, Any]:
    """The causal lesson's ``nn.Linear`` weights (seed 789) and a validated block size."""
    if unknown:
        raise InputError(Message("lessons.takes_no_option", name=repr("flash"), unknown=", ".join(sorted(unknown))))
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise InputError(Message("options.must_whole_number_keys", block=repr(block)), arg="block")
    weights, info = wts.choose("linear", int(values.shape[1]), d_out, int(values.shape[0]))
    return {"weights": weights, "weights_meta": info, "block": block}


def focus(tokens: int, prepared: dict[str, Any]) -> int:
    """The focus rule: the first query of the last block, whose row meets every block and a partly hidden one.

    With one block (``--block`` at least the text), the last query: the row that sees every key.
    """
    b = int(prepared["block"])
    n = math.ceil(tokens / b)
    return (n - 1) * b + 1 if n > 1 else tokens


def hidden(t: int, b: int) -> torch.Tensor:
    """``[i, u, j]``: 1 where key ``(u-1)·b + j`` is after query ``i`` (or past the end), else 0."""
    n = math.ceil(t / b)
    key = (torch.arange(n).reshape(1, n, 1) * b + torch.arange(b).reshape(1, 1, b)) + 1
    return (key > torch.arange(1, t + 1).reshape(t, 1, 1)).to(torch.float64)


def _blocked(rec: Recorder, name: str, src: Var, b: int, pad: Var | None, letter: str) -> Var:
    """``src[T, c]`` laid out as ``[u, j, c]``: a copy of key ``(u-1)·b + j``, the padding's zeros after the end."""
    t, d = src.data.shape
    n = math.ceil(t / b)
    fill = torch.zeros(n * b - t, d, dtype=src.data.dtype)
    value = torch.cat((src.data, fill)).reshape(n, b, d)
    key = f"(u-1)*{b}+j"
    args = [Ref(src.name, (key, "c"))] + ([Ref(pad.name, (f"{key}-{t}", "c"))] if pad is not None else [])
    sym = rf"{letter}^{{(<u>,<j>)}}_{{<c>}}"
    return rec.apply("cat", name, value, args, "ujc", symbol=sym, latex=sym, text=f"{src.name}[{key},<c>]")


def _prev(
    rec: Recorder, op: str, name: str, value: torch.Tensor, args: list[Ref], axes: str, start: str, **kw: str
) -> Var:
    """Record a running quantity: its references at the block before read ``start`` before the first block."""
    return rec.apply(op, name, value, args, axes, attrs={"start": start}, **kw)


def online(rec: Recorder, s: Var, vb: Var, pre: str = "flash.", reverse: bool = False) -> Var:
    """The loop over blocks: running max, rescale factors, running sums and accumulators; returns ``<pre>z``.

    Forward the blocks are visited 1, 2, …, U and a running quantity reads
    its value at ``u-1``; with ``reverse`` they are visited U, …, 1 (from
    the diagonal back) and it reads ``u+1``.  ``flash.s`` and ``flash.v`` are
    shared: only the order of the visit differs.
    """
    t, n, _ = s.data.shape
    d = int(vb.data.shape[-1])
    before = "u+1" if reverse else "u-1"  # the block visited just before block u
    order = range(n - 1, -1, -1) if reverse else range(n)
    last = 1 if reverse else n  # the block visited last
    sn = s.name
    bmax = rec.max(
        f"{pre}bmax", s("i", "u", "j"), "j", symbol=r"\hat m_{<i,u>}",
        latex=r"\hat m_{<i,u>} = \max_{j} s_{<i,u>j}", text=f"max_j {sn}[<i>,<u>,j]",
    )  # fmt: skip
    m = torch.empty(t, n, dtype=rec.dtype)
    old = torch.full((t, n), -torch.inf, dtype=rec.dtype)
    prev: int | None = None
    for u in order:  # the running max: the part of the loop that must go block after block
        if prev is not None:
            old[:, u] = m[:, prev]
        m[:, u] = bmax.data[:, u] if prev is None else torch.maximum(m[:, prev], bmax.data[:, u])
        prev = u
    run = _prev(
        rec, "maximum", f"{pre}m", m, [Ref(f"{pre}m", ("i", before)), Ref(f"{pre}bmax", ("i", "u"))], "iu", "-inf",
        symbol=r"m_{<i,u>}", latex=rf"m_{{<i,u>}} = \max(m_{{<i,{before}>}},\ \hat m_{{<i,u>}})",
        text=f"max({pre}m[<i>,<{before}>], {pre}bmax[<i>,<u>])",
    )  # fmt: skip
    top, ms = run, "m"
    if reverse:  # blocks after the diagonal come first: no key seen yet, m = -inf, and -inf - (-inf) is NaN
        none = rec.input(
            f"{pre}none", (m == -torch.inf).to(torch.float64), "iu", symbol=r"N_{<i,u>}",
            text="1 if row <i> has seen no key by block <u> else 0",
        )  # fmt: skip
        top, ms = rec.elementwise(
            "masked_fill", f"{pre}msafe", [run("i", "u"), none("i", "u")], "iu", symbol=r"\bar m_{<i,u>}",
            latex=r"\bar m_{<i,u>} = \begin{cases} m_{<i,u>} & N_{<i,u>} = 0\\ 0 & N_{<i,u>} = 1\end{cases}",
            text=f"{pre}m[<i>,<u>] unless {pre}none[<i>,<u>], then 0", fill=0.0,
            kept=f"{pre}m[<i>,<u>]", unless=[f"{pre}none[<i>,<u>]"],
        ), r"\bar m"  # fmt: skip
    shift = rec.elementwise(
        "sub", f"{pre}shift", [s("i", "u", "j"), top("i", "u")], "iuj", symbol=rf"s_{{<i,u,j>}} - {ms}_{{<i,u>}}",
        latex=rf"s_{{<i,u,j>}} - {ms}_{{<i,u>}}", text=f"{sn}[<i>,<u>,<j>] − {top.name}[<i>,<u>]",
    )  # fmt: skip
    p = rec.elementwise(
        "exp", f"{pre}p", [shift("i", "u", "j")], "iuj", symbol=r"p_{<i,u,j>}",
        latex=rf"p_{{<i,u,j>}} = e^{{s_{{<i,u,j>}} - {ms}_{{<i,u>}}}}", text=f"exp({pre}shift[<i>,<u>,<j>])",
    )  # fmt: skip
    rows = row_sum(rec, f"{pre}rowsum", p, r"r_{<i,u>}", r"p_{<i,u,j>}")
    dm = _prev(
        rec, "sub", f"{pre}dm", old - top.data, [Ref(f"{pre}m", ("i", before)), Ref(top.name, ("i", "u"))], "iu",
        "-inf", symbol=rf"m_{{<i,{before}>}} - {ms}_{{<i,u>}}", latex=rf"m_{{<i,{before}>}} - {ms}_{{<i,u>}}",
        text=f"{pre}m[<i>,<{before}>] − {top.name}[<i>,<u>]",
    )  # fmt: skip
    c = rec.elementwise(
        "exp", f"{pre}c", [dm("i", "u")], "iu", symbol=r"c_{<i,u>}",
        latex=rf"c_{{<i,u>}} = e^{{m_{{<i,{before}>}} - {ms}_{{<i,u>}}}}", text=f"exp({pre}dm[<i>,<u>])",
    )  # fmt: skip
    vn = vb.name
    pv = rec.contract(
        f"{pre}pv", p("i", "u", "j"), vb("u", "j", "c"), "iujc", "j", symbol=r"P_{<i,u,c>}",
        latex=r"P_{<i,u,c>} = \sum_{j} p_{<i,u>j}\, v^{(<u>,j)}_{<c>}", text=f"Σ_j {pre}p[<i>,<u>,j] × {vn}[<u>,j,<c>]",
        parts=("t", "s"),
        part_latex=(r"p_{<i,u,j>}\, v^{(<u>,<j>)}_{<c>}", r"\sum_{m=1}^{<j>} p_{<i,u>m}\, v^{(<u>,m)}_{<c>}"),
        part_text=(f"{pre}p[<i>,<u>,<j>] × {vn}[<u>,<j>,<c>]", f"Σ_{{m≤<j>}} {pre}p[<i>,<u>,m] × {vn}[<u>,m,<c>]"),
    )  # fmt: skip
    lsum, acc = torch.zeros(t, n, dtype=rec.dtype), torch.zeros(t, n, d, dtype=rec.dtype)
    prev = None
    for u in order:  # l and o: one multiplication, then one addition, per block, each rounded in the dtype
        was = lsum[:, prev] if prev is not None else torch.zeros(t, dtype=rec.dtype)
        lsum[:, u] = was * c.data[:, u] + rows.data[:, u]
        had = acc[:, prev] if prev is not None else torch.zeros(t, d, dtype=rec.dtype)
        acc[:, u] = had * c.data[:, u].unsqueeze(1) + pv.data[:, u]
        prev = u
    ell = _prev(
        rec, "rescale_add", f"{pre}l", lsum,
        [Ref(f"{pre}l", ("i", before)), Ref(f"{pre}c", ("i", "u")), Ref(f"{pre}rowsum", ("i", "u"))], "iu", "0",
        symbol=r"\ell_{<i,u>}", latex=rf"\ell_{{<i,u>}} = \ell_{{<i,{before}>}}\, c_{{<i,u>}} + r_{{<i,u>}}",
        text=f"{pre}l[<i>,<{before}>] × {pre}c[<i>,<u>] + {pre}rowsum[<i>,<u>]",
    )  # fmt: skip
    o = _prev(
        rec, "rescale_add", f"{pre}o", acc,
        [Ref(f"{pre}o", ("i", before, "c")), Ref(f"{pre}c", ("i", "u")), Ref(f"{pre}pv", ("i", "u", "c"))], "iuc", "0",
        symbol=r"o^{(<i>,<u>)}_{<c>}",  # o^{(5,1)}: the comma the prose and z's formula write
        latex=rf"o^{{(<i>,<u>)}}_{{<c>}} = o^{{(<i>,<{before}>)}}_{{<c>}}\, c_{{<i,u>}} + P_{{<i,u,c>}}",
        text=f"{pre}o[<i>,<{before}>,<c>] × {pre}c[<i>,<u>] + {pre}pv[<i>,<u>,<c>]",
    )  # fmt: skip
    return rec.elementwise(
        "div", f"{pre}z", [o("i", str(last), "c"), ell("i", str(last))], "ic", symbol=r"z^{(<i>)}_{<c>}",
        latex=rf"z^{{(<i>)}}_{{<c>}} = o^{{(<i>,{last})}}_{{<c>}} / \ell_{{<i>,{last}}}",
        text=f"{pre}o[<i>,{last},<c>] / {pre}l[<i>,{last}]",
    )  # fmt: skip


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    weights: dict[str, torch.Tensor],
    weights_meta: dict[str, Any],
    block: int,
    backward_pass: Backward | None = None,
) -> Trace:
    """Run the lesson; with ``backward_pass``, its backward pass too (:mod:`tracer.lessons.flash.backward`)."""
    rec = Recorder(dtype)
    t = int(inputs.shape[0])
    x, w = inputs_and_weights(rec, inputs, weights)
    q, k, v = projections(rec, x, w)
    n = math.ceil(t / block)
    with rec.stage("blocks"):
        pad = None
        if n * block > t:
            zeros = torch.zeros(n * block - t, int(k.data.shape[1]))
            pad = rec.input("flash.pad", zeros, "pc", symbol=r"0_{<p,c>}", text="0 (a key or value past the end)")
        kb = _blocked(rec, "flash.k", k, block, pad, "k")
        vb = _blocked(rec, "flash.v", v, block, pad, "v")
        root = sqrt_dk(rec, k)
        hide = rec.input(
            "flash.hide",
            hidden(t, block),
            "iuj",
            symbol=r"H_{<i,u,j>}",
            text=f"1 if (<u>−1)·{block} + <j> > <i> else 0",
        )
        omega = _block_scores(rec, q, kb)
        neg = rec.elementwise(
            "masked_fill", "flash.neg", [omega("i", "u", "j"), hide("i", "u", "j")], "iuj",
            symbol=r"\omega^{-\infty}_{<i,u,j>}", latex=r"\omega^{-\infty}_{<i,u,j>}",
            text="flash.omega[<i>,<u>,<j>] unless flash.hide[<i>,<u>,<j>], then -inf",
            kept="flash.omega[<i>,<u>,<j>]", unless=["flash.hide[<i>,<u>,<j>]"],
        )  # fmt: skip
        s = rec.elementwise(
            "div", "flash.s", [neg("i", "u", "j"), root()], "iuj", symbol=r"s_{<i,u,j>}",
            latex=r"s_{<i,u,j>} = \omega^{-\infty}_{<i,u,j>} / \sqrt{d_k}", text="flash.neg[<i>,<u>,<j>] / sqrt_dk",
        )  # fmt: skip
    with rec.stage("online"):
        z = online(rec, s, vb)
        stats = {"m": rec.var("flash.m"), "l": rec.var("flash.l")}
    with rec.stage("ordinary"):
        omega_full = scores(rec, "omega", q, k, (), r"\omega_{<i,j>}")
        _tri, up = causal_masks(rec, t)
        alpha = masked_softmax(rec, omega_full, up, root, weights=CAUSAL)
        zc = context(rec, "causal.z", alpha, v, ())
        rec.elementwise(
            "sub", "diff.z", [z("i", "c"), zc("i", "c")], "ic",
            symbol=r"z^{(<i>)}_{<c>} - z^{\mathrm{causal}(<i>)}_{<c>}",
            latex=r"z^{(<i>)}_{<c>} - z^{\mathrm{causal}(<i>)}_{<c>}", text="flash.z[<i>,<c>] − causal.z[<i>,<c>]",
        )  # fmt: skip
        bound = flash_bound(s.data, vb.data, block, rec.dtype)
        rec.maxabsdiff(
            "check.flash", z, zc, latex=r"\max \lvert z - z^{\mathrm{causal}} \rvert", text="max |flash.z − causal.z|",
            bound=bound, traced=True,
        )  # fmt: skip
    with rec.stage("reverse"):
        back = online(rec, s, vb, "rev.", reverse=True)
        rec.maxabsdiff(
            "check.rev", back, zc, latex=r"\max \lvert z^{\mathrm{rev}} - z^{\mathrm{causal}} \rvert",
            text="max |rev.z − causal.z|", bound=bound, traced=True,
        )  # fmt: skip
    info = {"lesson": "flash", "tokens": tokens, "query": query, "stages": list(STAGES), "block": block, "blocks": n}
    if backward_pass is not None:
        parts = {"q": q, "s": s, "kb": kb, "vb": vb, "root": root, "hide": hide, "z": z, **stats}
        info["backward"] = backward.record(rec, x, w, parts, backward_pass)
    return rec.trace({**meta, **info, "weights": weights_meta})


def _block_scores(rec: Recorder, q: Var, kb: Var) -> Var:
    """``flash.omega[i, u, j] = q(i) · k(u, j)``: every product and running sum, block by block."""
    return rec.contract(
        "flash.omega", q("i", "c"), kb("u", "j", "c"), "iujc", "c", symbol=r"\omega_{<i,u,j>}",
        latex=r"\omega_{<i,u,j>} = q^{(<i>)} \cdot k^{(<u>,<j>)}", text="q[<i>]·flash.k[<u>,<j>]",
        part_latex=(r"q^{(<i>)}_{<c>}\, k^{(<u>,<j>)}_{<c>}", r"\sum_{m=1}^{<c>} q^{(<i>)}_{m}\, k^{(<u>,<j>)}_{m}"),
        part_text=("q[<i>,<c>] × flash.k[<u>,<j>,<c>]", "Σ_{m≤<c>} q[<i>,m] × flash.k[<u>,<j>,m]"),
    )  # fmt: skip
