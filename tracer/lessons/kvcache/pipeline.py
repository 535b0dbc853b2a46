"""Lesson ``kvcache``: generation token by token with a key/value cache, and why it changes no bit.

A model that generates text runs attention once per new token.  The new
token's query needs every earlier key and value, but those never change: a
KV cache keeps them, so each step projects only the new token and computes
only its own row of scores, weights and context.  The lesson feeds the
prompt (the first ``P`` tokens, default 3) as step 1, then one token per
step; step s brings tokens ``a..b`` and records, under ``step<s>.``:

- ``x``, ``q``, ``k``, ``v``: the new tokens and their projections;
- ``cache.k``, ``cache.v``: the cache after appending (rows ``1..b``);
- ``mask``: rows ``a..b`` of the causal mask ``mask.triu`` (key j hidden when j > a - 1 + i,
  offset to the new tokens' positions: all zeros for one new token);
- ``omega``, ``neg.*``, ``causal.*``: the new rows' scores against every
  cached key, masked, scaled and softmaxed as in lesson causal;
- ``z``: the new rows of context.

Stage ``full`` is lesson causal's attention over the whole sequence (same
weights: ``nn.Linear`` after ``torch.manual_seed(789)``, no dropout, since
generation is inference), and ``check.full`` compares the context rows
collected from the steps (``gen.z``) with it.  Because the masked entries
only add -inf to a max, e^-inf = 0 to a running sum and 0 · v to a context,
and every sum runs left to right, the two agree bit for bit.  Stage ``cost``
counts the products with and without the cache and the cache's size per
token.  Ids: ``docs/step-ids.md``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from tracer.core.trace import Node, Ref, Trace
from tracer.errors import InputError
from tracer.lessons.kvcache import backward
from tracer.lessons.kvcache.kvbatch import Ahead, Replay, same_nodes
from tracer.lessons.kvcache.kvcost import COUNTS, LAYERS, cost
from tracer.lessons.kvcache.kvstep import BLANK, Spot, at_position, qkv, step
from tracer.record import weights as wts
from tracer.record.blocks.attention import context, scores
from tracer.record.blocks.backward import Backward
from tracer.record.blocks.masks import causal_masks, masked_softmax
from tracer.record.blocks.projections import inputs_and_weights, sqrt_dk
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "prompt", "step", "later", "full", "cost")
PROMPT = 3
"""The default prompt: "Your journey starts", then "with", "one", "step" are generated one at a time."""


def prepare(values: torch.Tensor, prompt: int | None = None, d_out: int = 2, **unknown: Any) -> dict[str, Any]:
    """The causal lesson's ``nn.Linear`` weights (seed 789) and a validated prompt length.

    Without ``prompt``, the prompt is :data:`PROMPT` tokens, or all but the
    last token of a shorter text.
    """
    if unknown:
        raise InputError(f"lesson 'kvcache' takes no option {', '.join(sorted(unknown))}")
    t = int(values.shape[0])
    if t < 2:
        raise InputError("lesson 'kvcache' needs at least two tokens: a prompt and a token to generate")
    prompt = min(PROMPT, t - 1) if prompt is None else prompt
    if isinstance(prompt, bool) or not isinstance(prompt, int) or prompt < 1:
        raise InputError(f"must be a whole number of tokens, at least 1, got {prompt!r}", arg="prompt")
    if prompt >= t:
        raise InputError(f"must leave a token to generate: the prompt has {prompt} of the {t} tokens", arg="prompt")
    weights, info = wts.choose("linear", int(values.shape[1]), d_out, t)
    return {"weights": weights, "weights_meta": info, "prompt": prompt}


def focus(tokens: int, prepared: dict[str, Any]) -> int:
    """The focus rule: the first generated token, the one whose step the page works out."""
    return int(prepared["prompt"]) + 1


def schedule(t: int, prompt: int) -> list[tuple[int, int]]:
    """The 1-based first and last token of each step: the prompt at once, then one token per step."""
    return [(1, prompt)] + [(n, n) for n in range(prompt + 1, t + 1)]


@contextmanager
def _quiet_collector() -> Iterator[None]:
    """No cyclic garbage collection while the steps are recorded.

    A long text makes tens of thousands of small nodes (29 per step), none of
    them garbage; the collector's passes over them cost a fifth of the time.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@_quiet_collector()
def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    weights: dict[str, torch.Tensor],
    weights_meta: dict[str, Any],
    prompt: int,
    spans: list[tuple[int, int]] | None = None,
    backward_pass: Backward | None = None,
) -> Trace:
    """Run the lesson: every step of the generation, the full causal attention beside it, and the counts.

    ``spans`` replaces the lesson's schedule (the prompt, then one token per
    step) with other calls, each the first and last token it brings: the
    check (:mod:`tracer.compare.check.generation`) feeds a call of two tokens too.
    With ``backward_pass``, the gradients back through every step and the
    cache (:mod:`~tracer.lessons.kvcache.backward`).
    """
    rec = Recorder(dtype)
    t, d_in = int(inputs.shape[0]), int(inputs.shape[1])
    x, w = inputs_and_weights(rec, inputs, weights)
    d = int(w["W_key"].data.shape[1])
    spans = schedule(t, prompt) if spans is None else spans
    if [a for a, _ in spans] != [1] + [b + 1 for _, b in spans[:-1]] or spans[-1][1] != t:
        raise InputError(f"the calls {spans} do not bring the {t} tokens in order, each once")
    with rec.stage("inputs"):
        _, up = causal_masks(rec, t)
    with rec.stage("prompt"):
        root = rec.constant("sqrt_dk", d**0.5, symbol=r"\sqrt{d_k}", text=f"sqrt(d_k) = sqrt({d})")
    zs = _steps(rec, spans, x, w, (up, root))
    with rec.stage("later"):
        gen = rec.apply(
            "cat",
            "gen.z",
            torch.from_numpy(np.concatenate([z for _, z in zs])),
            [Ref(name, (f"i-{a - 1}", "c")) for (name, _), (a, _) in zip(zs, spans, strict=True)],
            "ic",
            symbol=r"z^{(<i>)}_{<c>}",
            latex=r"z^{(<i>)}_{<c>}",
            text="step<s>.z[<i>−a+1,<c>] of the step that brought token <i>",
        )
        last = torch.tensor([b for _, b in spans])
        filled = (torch.arange(1, t + 1) <= last[:, None]).to(torch.float32)  # 1 where token j is cached
        rec.input("cache.rows", filled, "sj", symbol=r"C_{<s,j>}", text="1 if token <j> is cached after step <s>")
    with rec.stage("full"):
        full_attention(rec, x, w, up, gen)
    with rec.stage("cost"):
        products = cost(rec, spans, d_in, d)
    info = {"prompt": spans[0][1], "steps": [list(s) for s in spans], "layers": LAYERS, "products": products}
    if backward_pass is not None:
        info["backward"] = backward.record(rec, x, w, gen, spans, backward_pass)
    trace = rec.trace(
        {**meta, "lesson": "kvcache", "tokens": tokens, "query": query, "stages": list(STAGES), **info}
        | {"weights": weights_meta}
    )
    for name in COUNTS:
        trace.node(name).attrs["integer"] = True  # counts print as whole numbers
    return trace


def _steps(
    rec: Recorder, spans: list[tuple[int, int]], x: Var, w: dict[str, Var], masks: tuple[Var, Var]
) -> list[tuple[str, np.ndarray]]:
    """Record every step of the generation; the context rows of each (its ``z``'s name and values).

    The prompt's step, and any step that brings several tokens, are recorded
    by the primitives.  The steps that bring one token are filled in from the
    first of them recorded blank (:class:`~tracer.lessons.kvcache.kvbatch.Replay`),
    with the values worked out ahead, once that first one, filled in, has been
    found to be what the primitives record, field by field and bit for bit;
    where it is not, every step is recorded by the primitives.
    """
    up, root = masks
    alone = [a for a, b in spans if a == b]
    ahead = Ahead(rec.dtype, x, w, root, up, [a - 1 for a in alone]) if len(alone) > 1 else None
    replay: Replay | None = None
    tried = False  # whether a one-token step has been recorded to replay
    cache: tuple[Var, Var] | None = None
    zs: list[tuple[str, np.ndarray]] = []
    for s, span in enumerate(spans, start=1):
        spot, stage = Spot.of(s, span), "prompt" if s == 1 else "step" if s == 2 else "later"
        if ahead is not None and cache is not None and span[0] == span[1]:
            if not tried:
                replay, tried = _replay(rec, s, spot, stage, (x, w, masks), cache, ahead), True
            if replay is not None:
                values = ahead.values(span[0], _arrays(cache))
                new = [torch.from_numpy(values[part]) for part in ("cache.k", "cache.v")]
                nodes = replay.nodes(s, span[0], stage, values)
                rec.extend(nodes)
                cache = (_var(nodes, replay, "cache.k", new[0]), _var(nodes, replay, "cache.v", new[1]))
                zs.append((f"{spot.pre}z", values["z"]))
                continue
        with rec.stage(stage):
            first = len(rec)
            z, ck, cv = step(rec, spot, x, w, masks, cache)
        at_position(rec.since(first), span[0] - 1, span[0] == span[1])
        cache = (ck, cv)
        zs.append((z.name, z.data.numpy()))
    return zs


def _replay(
    rec: Recorder,
    s: int,
    spot: Spot,
    stage: str,
    operands: tuple[Var, dict[str, Var], tuple[Var, Var]],
    cache: tuple[Var, Var],
    ahead: Ahead,
) -> Replay | None:
    """Step ``s``, which brings one token, recorded with its text blank, if it fills in to what the primitives record.

    ``operands`` are the inputs, the weights and the masks.  Both forms are
    recorded apart from ``rec``: the step as the primitives record it, and
    blank, reading the cache under the previous step's blank name.
    """
    x, w, masks = operands
    blank, real = Recorder(rec.dtype), Recorder(rec.dtype)
    step(blank, spot.blank(), x, w, masks, (_blanked(cache[0]), _blanked(cache[1])))
    with real.stage(stage):
        step(real, spot, x, w, masks, cache)
    at_position(real.nodes, spot.a - 1, True)
    replay = Replay(blank.nodes)
    filled = replay.nodes(s, spot.a, stage, ahead.values(spot.a, _arrays(cache)))
    return replay if same_nodes(filled, real.nodes) else None


def _arrays(cache: tuple[Var, Var]) -> tuple[np.ndarray, np.ndarray]:
    """The cached keys and values as numpy arrays (not copied)."""
    return cache[0].data.numpy(), cache[1].data.numpy()


def _blanked(var: Var) -> Var:
    """``var`` (``step3.cache.k``) under the previous step's blank name."""
    return Var(f"{BLANK['prev']}.{var.name.partition('.')[2]}", var.axes, var.data, var.symbol)


def _var(nodes: list[Node], replay: Replay, part: str, data: torch.Tensor) -> Var:
    node = nodes[replay.parts.index(part)]
    return Var(node.name, node.axes, data, node.symbol)


def full_attention(rec: Recorder, x: Var, w: dict[str, Var], up: Var, gen: Var) -> Var:
    """Lesson causal's attention over every token at once (ids ``full.*``), compared with the steps' rows."""
    with rec.stage("full"):
        q, k, v = qkv(rec, "full.", x, w)
        omega = scores(rec, "full.omega", q, k, (), r"\omega_{<i,j>}")
        root = sqrt_dk(rec, k, pre="full.")
        alpha = masked_softmax(rec, omega, up, root, "full.", r"\alpha^{\mathrm{causal}}")
        z = context(rec, "full.z", alpha, v, ())
        rec.maxabsdiff(
            "check.full",
            gen,
            z,
            latex=r"\max \lvert z^{\mathrm{cache}} - z^{\mathrm{full}} \rvert",
            text="max |gen.z − full.z|",
        )
    return z
