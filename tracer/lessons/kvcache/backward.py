"""Lesson ``kvcache``'s backward pass: through every step of the generation, and through the cache.

The output is ``gen.z[i,c]``, every token's context row (each from the step
that brought the token); its upstream gradient ``dgen.z`` is that of
L = ½ Σ z² (the output itself) or the one given.  Each step's rows of it,
``dstep<s>.z``, start that step's backward pass, from the last step back to
the first:

* through the step's weighted sum and masked softmax, as in lesson causal:
  ``dstep<s>.causal.alpha``, ``dstep<s>.neg.scaled`` (its row sum its own
  step), ``dstep<s>.neg.omega``, ``dstep<s>.omega`` (0 for a key after the
  query), ``dstep<s>.q``;
* the cache: step s reads every cached key and value, so its read gives
  ``dstep<s>.cache.k.read[j,c]`` = Σ_i domega[i,j]·q[i,c] (and
  ``dstep<s>.cache.v.read`` = Σ_i alpha[i,j]·dz[i,c]).  The cache after step
  s is also the start of step s + 1's cache, so its rows come back from there:
  ``dstep<s>.cache.k.later[j,c]`` = ``dstep<s+1>.cache.k[j,c]``, and
  ``dstep<s>.cache.k`` = read + later (the last step has no later: its read
  is ``dstep<S>.cache.k``).  A key cached at step s and read by steps s,
  s + 1, …, S gets the sum of all their gradients, one addition per step;
* the step's new rows of the cache are its own keys and values:
  ``dstep<s>.k[i,c]`` = ``dstep<s>.cache.k[i+a−1,c]`` (and ``v``);
* its projections: the weights are read by every step, so each step's part
  is a path, ``dW_query.step<s>[k,c]`` = Σ_i step<s>.x[i,k]·dstep<s>.q[i,c],
  added step by step into ``dW_query`` (``dW_query.sum<s>`` holds steps
  1..s); the step's inputs' gradient ``dstep<s>.x`` is the sum of the query,
  key and value paths (``dstep<s>.x.query`` …);
* ``dx[i,k]``: token i's row of the step that brought it.

Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from tracer.core.trace import Node, Ref
from tracer.lessons.kvcache.kvstep import at_position
from tracer.record.blocks import backprojections
from tracer.record.blocks import backward as bw
from tracer.record.blocks.backprojections import PATHS
from tracer.record.recorder import Recorder, Var

STAGES = ("doutput", "dcontext", "dnormalize", "dscores", "dcache", "dprojections", "dinputs")
LETTERS = {"k": "K", "v": "V"}
"""The cache's two halves and their letters in the formulas."""


def record(
    rec: Recorder, x: Var, w: dict[str, Var], gen: Var, spans: Sequence[tuple[int, int]], back: bw.Backward
) -> dict[str, Any]:
    """Record the gradients of ``gen`` back through every step (the last first) to the weights and ``x``."""
    nodes = {n.name: n for n in rec.nodes}
    root = Forward(nodes, "")("sqrt_dk")
    with rec.stage("doutput"):
        dgen = bw.upstream(rec, gen, back, r"z^{(<i>)}_{<c>}")
    later: dict[str, Var] = {}
    xs: list[Var] = []
    paths: dict[str, list[Var]] = {name: [] for _, name, _, _ in PATHS}
    for s in range(len(spans), 0, -1):
        fwd = Forward(nodes, f"step{s}.")
        grads, later = _step(rec, fwd, spans[s - 1], (dgen, root), later, s)
        dxs, parts = _projections(rec, fwd, w, grads, s)
        xs.insert(0, dxs)
        for name, var in parts.items():
            paths[name].insert(0, var)
    with rec.stage("dprojections"):
        weights = [_over_steps(rec, f"d{w[name].name}", paths[name], wsym[3:-1]) for _, name, _, wsym in PATHS]
    with rec.stage("dinputs"):
        dx = rec.apply(
            "cat",
            f"d{x.name}",
            torch.cat([v.data for v in xs]),
            [Ref(v.name, (f"i-{a - 1}", "k")) for v, (a, _) in zip(xs, spans, strict=True)],
            "ik",
            symbol=bw.bar(r"x^{(<i>)}_{<k>}"),
            latex=bw.bar(r"x^{(<i>)}_{<k>}"),
            text="row <i>−a+1 of dstep·.x, the inputs' gradient of the step that brought token <i> (a its first token)",
        )
    return bw.meta(gen, dgen, back, STAGES, [g.name for g in weights] + [dx.name])


class Forward:
    """One step's forward vars, read from the recorded nodes with their own symbols (``step4.q`` …)."""

    def __init__(self, nodes: dict[str, Node], pre: str) -> None:
        self.nodes, self.pre = nodes, pre

    def __call__(self, part: str) -> Var:
        node = self.nodes[self.pre + part]
        return Var(node.name, node.axes, torch.from_numpy(np.array(node.value)), node.symbol)


def _step(
    rec: Recorder, fwd: Forward, span: tuple[int, int], read: tuple[Var, Var], later: dict[str, Var], s: int
) -> tuple[dict[str, Var], dict[str, Var]]:
    """Step ``s``'s attention and cache backward: the gradients of its q, k, v, and the rows of its cache's
    gradient it passes back to the step before (``later`` holds those step s + 1 passed to it).  ``read`` is
    the upstream gradient of every token's row and √d_k."""
    a, b = span
    dgen, root = read
    g, first = f"d{fwd.pre}", len(rec)
    alpha, q = fwd("causal.alpha"), fwd("q")
    own = ".read" if later else ""
    with rec.stage("doutput"):
        dz = _rows(rec, f"{g}z", dgen, a - 1, b - a + 1, "i", r"z^{(<i>)}_{<c>}")
    with rec.stage("dcontext"):
        names = f"{g}causal.alpha", f"{g}cache.v{own}"
        dalpha, dv = bw.through_weighted_sum(rec, dz, alpha, fwd("cache.v"), (), *names, vsym="V")
    domega = backprojections.masked_scores(rec, root, fwd("mask"), alpha, dalpha, fwd.pre)
    with rec.stage("dscores"):
        dq, dk = bw.through_scores(rec, domega, q, fwd("cache.k"), (), f"{g}q", f"{g}cache.k{own}", ksym="K")
    with rec.stage("dcache"):
        cache = {"k": dk, "v": dv}
        if later:
            cache = {n: _added(rec, f"{g}cache.{n}", cache[n], later[n], LETTERS[n]) for n in cache}
        new = {n: _rows(rec, f"{g}{n}", cache[n], a - 1, b - a + 1, "i", rf"{n}^{{(<i>)}}_{{<c>}}") for n in cache}
        passed = (
            {n: _passed(rec, f"dstep{s - 1}.cache.{n}.later", cache[n], a - 1, n, s) for n in cache} if s > 1 else {}
        )
    # the step's rows are named by the tokens' positions; a sum over the rows keeps its own bounds
    at_position([n for n in rec.since(first) if n.attrs.get("over") != "i"], a - 1, a == b)
    return {"q": dq, **new}, passed


def _projections(
    rec: Recorder, fwd: Forward, w: dict[str, Var], grads: dict[str, Var], s: int
) -> tuple[Var, dict[str, Var]]:
    """Step ``s``'s paths of the weights' gradients, and its inputs' gradient (the sum of its three paths)."""
    xs, g = fwd("x"), f"d{fwd.pre}"
    paths, steps = [], {}
    with rec.stage("dprojections"):
        for path, wname, letter, wsym in PATHS:
            gq = grads[letter]
            sym = rf"\bar{{W}}^{{{wsym[3:-1]}\,(s={s})}}_{{<k,c>}}"
            over_rows = ("k", "c", "i")
            steps[wname] = bw.products(
                rec, f"d{w[wname].name}.step{s}", xs("i", "k"), gq("i", "c"), over_rows, "i", sym
            )
            xsym = rf"\bar{{x}}^{{(<i>)\,\mathrm{{{path}}}}}_{{<k>}}"
            over_cols = ("i", "k", "c")
            paths.append(bw.products(rec, f"{g}x.{path}", gq("i", "c"), w[wname]("k", "c"), over_cols, "c", xsym))
    with rec.stage("dinputs"):
        return bw.sum_paths(rec, f"{g}x", paths, r"x^{(<i>)}_{<k>}"), steps


def _passed(rec: Recorder, name: str, cache: Var, rows: int, n: str, s: int) -> Var:
    """The first ``rows`` rows of step ``s``'s cache gradient, handed back to step s − 1's cache (its ``later``)."""
    letter = LETTERS[n]
    sym = rf"{letter}^{{(<j>)\,\mathrm{{later}}}}_{{<c>}}"
    why = bw.bar(sym) + rf" = \bar{{{letter}}}^{{(<j>)}}_{{<c>}}\ (\text{{step }}{s})"
    return _rows(rec, name, cache, 0, rows, "j", sym, why)


def _rows(rec: Recorder, name: str, src: Var, off: int, n: int, axis: str, sym: str, latex: str = "") -> Var:
    """``name[<axis>,c]`` = ``src[<axis>+off, c]``: ``n`` rows of a gradient, after its first ``off``."""
    at = f"{axis}+{off}" if off else axis
    return rec.apply(
        "getitem",
        name,
        src.data[off : off + n].clone(),
        [Ref(src.name, (at, "c"))],
        (axis, "c"),
        symbol=bw.bar(sym),
        latex=latex or bw.bar(sym),
        text=f"{src.name}[<{axis}>{f'+{off}' if off else ''},<c>]",
    )


def _added(rec: Recorder, name: str, read: Var, later: Var, letter: str) -> Var:
    """A cached row's gradient: this step's read of it plus what the later steps' reads passed back."""
    sym = bw.bar(rf"{letter}^{{(<j>)}}_{{<c>}}")
    return _add(
        rec, name, (read, later), sym, rf"\bar{{{letter}}}^{{\mathrm{{read}}}} + \bar{{{letter}}}^{{\mathrm{{later}}}}"
    )


def _over_steps(rec: Recorder, name: str, parts: list[Var], sup: str) -> Var:
    """A weight's gradient: its steps' paths added in step order, one addition per step (``<name>.sum<s>``).

    ``sup`` is the weight's letter (``Q``: W^Q)."""
    acc = parts[0]
    for s, part in enumerate(parts[1:], 2):
        last = s == len(parts)
        sym = rf"\bar{{W}}^{{{sup}}}_{{<k,c>}}" if last else rf"\bar{{W}}^{{{sup}\,(s \le {s})}}_{{<k,c>}}"
        why = rf"\sum_{{s'=1}}^{{{s}}} \bar{{W}}^{{{sup}\,(s=s')}}_{{<k,c>}}"
        acc = _add(rec, name if last else f"{name}.sum{s}", (acc, part), sym, why)
    return acc


def _add(rec: Recorder, name: str, terms: tuple[Var, Var], sym: str, why: str) -> Var:
    """``name`` = the two ``terms`` added entry by entry (one addition each), written ``sym = why``."""
    left, right = terms
    ax = left.axes
    at = ",".join(f"<{a}>" for a in ax)
    return rec.elementwise(
        "add",
        name,
        [left(*ax), right(*ax)],
        ax,
        symbol=sym,
        latex=f"{sym} = {why}",
        text=f"{left.name}[{at}] + {right.name}[{at}]",
    )
