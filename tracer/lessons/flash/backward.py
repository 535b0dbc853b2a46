"""Lesson ``flash``'s backward pass, block by block, as FlashAttention-2 runs it: the weights recomputed, not stored.

The forward kept, per query, only its statistics after the last block U:
the running max ``m = flash.m[i,U]`` and the running sum ``ℓ = flash.l[i,U]``.
The backward never reads a stored weight matrix.  From the upstream gradient
``dflash.z`` (by default that of L = ½ Σ z², so it is z itself):

* ``dflash.D[i] = Σ_c dflash.z[i,c] · flash.z[i,c]``: FlashAttention-2's D,
  one number per query.  It equals the softmax backward's row sum
  Σ_j P_ij dP_ij, because Σ_j P_ij (dO_i · v_j) = dO_i · Σ_j P_ij v_j = dO_i · O_i,
  and costs d products instead of T;
* ``recomp.shift``, ``recomp.exp``, ``recomp.p[i,u,j] = e^(s − m) / ℓ``: each
  block's weights recomputed from the saved statistics (a hidden key's
  ``s`` is −∞, so its weight is exactly 0).  FlashAttention-2 folds the two
  statistics into one, the log-sum-exp L = m + log ℓ, and computes e^(s − L);
  this trace keeps m and ℓ and divides, which needs no logarithm: a
  logarithm is not an IEEE operation, and this project has no correctly
  rounded one yet, so e^(s − L) could not be the same bits on every machine
  (the exponential is correctly rounded, ``tracer.core.exact``, and the
  division is one IEEE operation).  The two forms are the same number in
  exact arithmetic;
* per block: ``dflash.v[u,j,c] = Σ_i p · dz`` (dV = Pᵀ dO), ``dflash.p[i,u,j] =
  Σ_c dz · v`` (dP = dO Vᵀ), ``dflash.s.shift = dflash.p − D`` and ``dflash.s
  = p × dflash.s.shift`` (dS = P ∘ (dP − D)), ``dflash.neg = dflash.s / √d_k``,
  ``dflash.omega`` (exactly 0 where ``flash.hide``);
* ``dqblock[i,c,u] = Σ_j dflash.omega · k`` (one block's part, as FlashAttention-2
  accumulates dQ block by block) and ``dq[i,c] = Σ_u dqblock``; ``dflash.k[u,j,c]
  = Σ_i dflash.omega · q``;
* ``dk[i,c]``, ``dv[i,c]``: the blocks laid back out as tokens (the padding's
  gradient is dropped: the padding is a constant), then ``dW_query``,
  ``dW_key``, ``dW_value`` and ``dx`` as in lesson trainable.

Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from typing import Any

from tracer.core.ids import rename
from tracer.core.trace import Ref
from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.recorder import Recorder, Var

STAGES = ("dprepare", "drecompute", "dblocks", "dscores", "dprojections", "dinputs")


def record(rec: Recorder, x: Var, w: dict[str, Var], parts: dict[str, Var], back: bw.Backward) -> dict[str, Any]:
    """Record the gradients; ``parts`` names the forward's vars (q, s, kb, vb, root, hide, m, l, z)."""
    z, s, kb, vb = parts["z"], parts["s"], parts["kb"], parts["vb"]
    last = str(int(s.data.shape[1]))  # block U: the statistics after the whole row
    with rec.stage("dprepare"):
        dz = bw.upstream(rec, z, back, r"z^{(<i>)}_{<c>}")
        dd = bw.products(rec, "dflash.D", dz("i", "c"), z("i", "c"), ("i", "c"), "c", r"D_{<i>}")
    with rec.stage("drecompute"):
        p = _recomputed(rec, s, parts["m"], parts["l"], last)
    with rec.stage("dblocks"):
        ds, dvb = _block_gradients(rec, dz, dd, p, vb)
    with rec.stage("dscores"):
        why = r"\bar{s}_{<i,u,j>} / \sqrt{d_k}"
        dneg = bw.rescaled(rec, "dflash.neg", ds, parts["root"], "div", r"\omega^{-\infty}_{<i,u,j>}", why)
        domega = bw.masked_out(rec, "dflash.omega", dneg, parts["hide"], r"\omega_{<i,u,j>}")
        sym = bw.bar(r"q^{(<i>)}_{<c>}")
        part = bw.products(rec, "dqblock", domega("i", "u", "j"), kb("u", "j", "c"), ("i", "c", "u", "j"), "j", sym)
        dq = _over_blocks(rec, part, sym)
        dkb = bw.products(
            rec, "dflash.k", domega("i", "u", "j"), parts["q"]("i", "c"), ("u", "j", "c", "i"), "i",
            bw.bar(r"k^{(<u>,<j>)}_{<c>}"),
        )  # fmt: skip
        t = int(x.data.shape[0])
        grads = {"q": dq, "k": _unblocked(rec, "dk", dkb, t, "k"), "v": _unblocked(rec, "dv", dvb, t, "v")}
    leaves = backprojections.to_inputs(rec, x, w, grads)
    return bw.meta(z, dz, back, STAGES, leaves)


def _recomputed(rec: Recorder, s: Var, m: Var, ell: Var, last: str) -> Var:
    """``recomp.p[i,u,j] = e^(s[i,u,j] − m[i,U]) / ℓ[i,U]``: a block's weights again, from the saved statistics."""
    shift = rec.elementwise(
        "sub", "recomp.shift", [s("i", "u", "j"), m("i", last)], "iuj", symbol=rf"s_{{<i,u,j>}} - m_{{<i>,{last}}}",
        latex=rf"s_{{<i,u,j>}} - m_{{<i>,{last}}}", text=f"{s.name}[<i>,<u>,<j>] − {m.name}[<i>,{last}]",
    )  # fmt: skip
    e = rec.elementwise(
        "exp", "recomp.exp", [shift("i", "u", "j")], "iuj", symbol=rf"e^{{s_{{<i,u,j>}} - m_{{<i>,{last}}}}}",
        latex=rf"e^{{s_{{<i,u,j>}} - m_{{<i>,{last}}}}}", text="exp(recomp.shift[<i>,<u>,<j>])",
    )  # fmt: skip
    return rec.elementwise(
        "div", "recomp.p", [e("i", "u", "j"), ell("i", last)], "iuj", symbol=r"P_{<i,u,j>}",
        latex=rf"P_{{<i,u,j>}} = e^{{s_{{<i,u,j>}} - m_{{<i>,{last}}}}} / \ell_{{<i>,{last}}}",
        text=f"recomp.exp[<i>,<u>,<j>] / {ell.name}[<i>,{last}]",
    )  # fmt: skip


def _block_gradients(rec: Recorder, dz: Var, dd: Var, p: Var, vb: Var) -> tuple[Var, Var]:
    """dV, dP and dS of every block: ``dflash.v``, ``dflash.p``, ``dflash.s.shift``, ``dflash.s``; returns dS, dV."""
    sym_v = bw.bar(r"v^{(<u>,<j>)}_{<c>}")
    dvb = bw.products(rec, "dflash.v", p("i", "u", "j"), dz("i", "c"), ("u", "j", "c", "i"), "i", sym_v)
    dp = bw.products(rec, "dflash.p", dz("i", "c"), vb("u", "j", "c"), ("i", "u", "j", "c"), "c", r"\bar{P}_{<i,u,j>}")
    shift = rec.elementwise(
        "sub", "dflash.s.shift", [dp("i", "u", "j"), dd("i")], "iuj", symbol=r"\bar{P}_{<i,u,j>} - D_{<i>}",
        latex=r"\bar{P}_{<i,u,j>} - D_{<i>}", text="dflash.p[<i>,<u>,<j>] − dflash.D[<i>]",
    )  # fmt: skip
    sym = bw.bar(r"s_{<i,u,j>}")
    ds = rec.elementwise(
        "mul", "dflash.s", [p("i", "u", "j"), shift("i", "u", "j")], "iuj", symbol=sym,
        latex=sym + r" = P_{<i,u,j>} \left(\bar{P}_{<i,u,j>} - D_{<i>}\right)",
        text="recomp.p[<i>,<u>,<j>]·(dflash.p[<i>,<u>,<j>] − dflash.D[<i>])",
    )  # fmt: skip
    return ds, dvb


def _over_blocks(rec: Recorder, part: Var, sym: str) -> Var:
    """``dq[i,c] = Σ_u dqblock[i,c,u]``: the blocks' parts of the query's gradient, one running sum."""
    return rec.contract(
        "dq", part("i", "c", "u"), None, ("i", "c", "u"), "u", symbol=sym,
        latex=rf"{sym} = \sum_{{u'}} " + rename(part.symbol, {"u": "u'"}),
        text="Σ_u dqblock[<i>,<c>,u]",
        part_latex=("", r"\sum_{u'=1}^{<u>} " + rename(part.symbol, {"u": "u'"})),
        part_text=("", "Σ_{m≤<u>} dqblock[<i>,<c>,m]"),
    )  # fmt: skip


def _unblocked(rec: Recorder, name: str, blocked: Var, t: int, letter: str) -> Var:
    """``name[i,c] = blocked[⌈i/B⌉, (i−1) mod B + 1, c]``: a block's gradient laid back out by token."""
    _n, b, _d = blocked.data.shape
    value = blocked.data.reshape(-1, blocked.data.shape[-1])[:t]
    sym = bw.bar(rf"{letter}^{{(<i>)}}_{{<c>}}")
    return rec.apply(
        "gather", name, value, [Ref(blocked.name, (f"(i-1)//{b}+1", f"(i-1)%{b}+1", "c"))], "ic", symbol=sym,
        latex=sym + rf" = \bar{{{letter}}}^{{(\lceil <i>/{b} \rceil,\,(<i>-1) \bmod {b} + 1)}}_{{<c>}}",
        text=f"{blocked.name}[⌈<i>/{b}⌉,(<i>−1) mod {b} + 1,<c>]",
    )  # fmt: skip
