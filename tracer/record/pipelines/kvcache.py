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

import torch

from tracer.core.trace import Node, Ref, Trace
from tracer.errors import InputError
from tracer.record import weights as wts
from tracer.record.pipelines.blocks import context, projection, scores
from tracer.record.pipelines.causal import causal_masks, masked_softmax
from tracer.record.pipelines.kvbatch import Ahead
from tracer.record.pipelines.kvcost import COUNTS, LAYERS, cost
from tracer.record.pipelines.trainable import inputs_and_weights, sqrt_dk
from tracer.record.recorder import Recorder, Var

STAGES = ("inputs", "prompt", "step", "later", "full", "cost")
PROMPT = 3
"""The default prompt: "Your journey starts", then "with", "one", "step" are generated one at a time."""
SYMS = {"W_query": "W^{Q}", "W_key": "W^{K}", "W_value": "W^{V}"}


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


def schedule(t: int, prompt: int) -> list[tuple[int, int]]:
    """The 1-based first and last token of each step: the prompt at once, then one token per step."""
    return [(1, prompt)] + [(n, n) for n in range(prompt + 1, t + 1)]


def append(rec: Recorder, name: str, old: Var | None, new: Var, a: int, sym: str) -> Var:
    """``name[j,c]``: the cache's rows ``1..a-1`` (``old``), then the new rows ``a..b`` (``new``)."""
    data = new.data if old is None else torch.cat((old.data, new.data))
    refs = [Ref(new.name, (f"j-{a - 1}", "c") if a > 1 else ("j", "c"))]
    if old is not None:
        refs.insert(0, Ref(old.name, ("j", "c")))
    return rec.apply(
        "cat",
        name,
        data,
        refs,
        "jc",
        symbol=rf"{sym}^{{(<j>)}}_{{<c>}}",
        latex=rf"{sym}^{{(<j>)}}_{{<c>}}",
        text=f"{old.name if old is not None else new.name}[<j>,<c>] for <j> < {a}, else {new.name}[<j>−{a - 1},<c>]"
        if old is not None
        else f"{new.name}[<j>,<c>]",
    )


def qkv(rec: Recorder, pre: str, x: Var, w: dict[str, Var]) -> tuple[Var, Var, Var]:
    """``<pre>q``, ``<pre>k``, ``<pre>v``: the rows of ``x`` projected, every product and running sum recorded."""
    q, k, v = (
        projection(rec, f"{pre}{n}", x, w[wn], (), rf"{n}^{{(<i>)}}_{{<c>}}", SYMS[wn])
        for n, wn in (("q", "W_query"), ("k", "W_key"), ("v", "W_value"))
    )
    return q, k, v


def step(
    rec: Recorder,
    s: int,
    span: tuple[int, int],
    x: Var,
    w: dict[str, Var],
    masks: tuple[Var, Var],
    cache: tuple[Var, Var] | None,
) -> tuple[Var, Var, Var]:
    """One call of the cached attention: the new tokens ``a..b`` in, their context rows out, the cache grown."""
    a, b = span
    up, root = masks
    pre = f"step{s}."
    new = rec.apply(
        "getitem",
        f"{pre}x",
        x.data[a - 1 : b],
        [Ref(x.name, (f"i+{a - 1}", "k"))],
        "ik",
        symbol=r"x^{(<i>)}_{<k>}",
        latex=r"x^{(<i>)}_{<k>}",
        text=f"x[<i>+{a - 1},<k>]",
    )
    q, k, v = qkv(rec, pre, new, w)
    ck = append(rec, f"{pre}cache.k", cache[0] if cache else None, k, a, "K")
    cv = append(rec, f"{pre}cache.v", cache[1] if cache else None, v, a, "V")
    hide = rec.apply(
        "getitem",
        f"{pre}mask",
        up.data[a - 1 : b, :b],
        [Ref(up.name, (f"i+{a - 1}", "j"))],
        "ij",
        symbol=r"U_{<i,j>}",
        latex=r"U_{<i,j>}",
        text=f"mask.triu[<i>+{a - 1},<j>]: 1 if <j> > <i> + {a - 1} else 0",
    )
    omega = scores(rec, f"{pre}omega", q, ck, (), r"\omega_{<i,j>}")
    rule = (rf"<j> \le <i> + {a - 1}", rf"<j> > <i> + {a - 1}", f"<j> > <i> + {a - 1}")
    alpha = masked_softmax(rec, omega, hide, root, pre, r"\alpha^{\mathrm{cache}}", rule=rule)
    z = context(rec, f"{pre}z", alpha, cv, ())
    return z, ck, cv


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
) -> Trace:
    """Run the lesson: every step of the generation, the full causal attention beside it, and the counts.

    ``spans`` replaces the lesson's schedule (the prompt, then one token per
    step) with other calls, each the first and last token it brings: the
    check (:mod:`tracer.compare.check.generation`) feeds a call of two tokens too.
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
    cache: tuple[Var, Var] | None = None
    zs = []
    alone = [a for a, b in spans if a == b]
    ahead = Ahead(rec, x, w, root, [a - 1 for a in alone]) if len(alone) > 1 else None
    for s, span in enumerate(spans, start=1):
        if ahead is not None and span[0] == span[1]:
            rec.ahead.update(ahead.step(f"step{s}.", span[0]))
        with rec.stage("prompt" if s == 1 else "step" if s == 2 else "later"):
            z, ck, cv = step(rec, s, span, x, w, (up, root), cache)
        if rec.ahead:
            raise RuntimeError(f"values worked out ahead and never recorded: {', '.join(sorted(rec.ahead))}")
        cache = (ck, cv)
        zs.append(z)
    with rec.stage("later"):
        gen = rec.apply(
            "cat",
            "gen.z",
            torch.cat([z.data for z in zs]),
            [Ref(z.name, (f"i-{a - 1}", "c")) for z, (a, _) in zip(zs, spans, strict=True)],
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
    trace = rec.trace(
        {**meta, "lesson": "kvcache", "tokens": tokens, "query": query, "stages": list(STAGES), **info}
        | {"weights": weights_meta}
    )
    by_step: dict[str, list[Node]] = {}
    for node in trace.nodes:
        by_step.setdefault(node.name.partition(".")[0], []).append(node)
    for s, (a, b) in enumerate(spans, start=1):
        at_position(by_step.get(f"step{s}", []), a - 1, a == b)
    for node in trace.nodes:
        if node.name in COUNTS:
            node.attrs["integer"] = True  # counts print as whole numbers
    return trace


def at_position(nodes: list[Node], offset: int, single: bool) -> None:
    """Name the rows of a step's nodes by token position: row i of ``step<s>.q`` is token i + offset.

    Ids stay the step's own (``step2.q[1,1]``, its first and only row); the
    formulas read the token's position (``q^{(4)}_1``, or ``<i+3>`` when a
    step brings several tokens), and ``row_offset`` tells the page which
    token each row is.
    """
    if not offset and not single:
        return
    for node in nodes:
        if "i" in node.axes:
            wide = max(node.value.shape) > 9  # ids.fill separates indices with commas from 10 entries on
            node.latex = _shift(node.latex, offset, single, wide)
            node.symbol = _shift(node.symbol, offset, single, wide)
            node.attrs["row_offset"] = offset


def _shift(latex: str, offset: int, single: bool, wide: bool) -> str:
    """``<i,j>`` -> ``4<j>`` for a step's one new token (``<i+3,j>`` for several): the token's position.

    The query axis leads every placeholder it is in (``<i>``, ``<i,j>``, ``<i,c>``):
    a step's nodes have no batch or head axis before it.
    """
    if "<i" not in latex:
        return latex
    if single:
        pos = str(offset + 1)
        return latex.replace("<i>", pos).replace("<i,", pos + ("," if wide else "") + "<")
    return latex.replace("<i>", f"<i+{offset}>").replace("<i,", f"<i+{offset},")


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
