"""Lesson ``model``: one attention head of a trained model on the reader's sentence, every scalar recorded.

:func:`prepare` reads the model (:mod:`.ggufread` or :mod:`.hfread`),
tokenizes the sentence with the model's own tokenizer and runs the untraced
part in float64 (:mod:`.forward`): the layers before the chosen one, whose
output, rounded to float32, is the recorded input ``x`` here, and the rest of
the model up to the greedy next token.  :func:`build` then traces the chosen
head of the chosen layer with the engine's primitives:

- ``norm``: the RMSNorm of the residual stream, ``x²``, its mean, ``+ ε``,
  the square root, the division and the scale ``g``;
- ``projections``: the head's query and its group's key and value, every
  product of every dot product over the model's width;
- ``rotation``: each pair of the query and key turned by ``m θ_p``, paired
  as the file pairs them (GGUF's neighbours, Hugging Face's halves);
- ``attention``: scores, the causal mask, the scaled softmax, the weighted sum;
- ``output``: the head's share of the output projection (its ``d_h`` rows of
  ``W^O``), what this head adds to the residual stream.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.lessons.model import Options, forward
from tracer.lessons.model.checkpoint import Checkpoint
from tracer.lessons.rope.rotary import angles, rotate
from tracer.message import Message
from tracer.record.blocks.attention import context, projection, scores
from tracer.record.blocks.masks import causal_masks, masked_softmax
from tracer.record.blocks.projections import sqrt_dk
from tracer.record.recorder import Recorder

STAGES = ("inputs", "norm", "projections", "rotation", "attention", "output", "heads", "next")
DEFAULTS = Options()
MAX_TEXT_TOKENS = 32
"""Tokens a sentence may have: each is thousands of recorded products per projection."""


def load(model: str | Path | None) -> Checkpoint:
    """The checkpoint ``model`` names: ``None`` the default (fetched once), a folder, or a GGUF file.

    A quantized GGUF file's weights are read from the dequantized-weight
    cache (:mod:`.weightcache`), which the first run fills.
    """
    from tracer.lessons.model import fetch, ggufread, hfread, weightcache

    path = fetch.default_model() if model is None else Path(model)
    if path.is_dir():
        return hfread.read(path)
    return weightcache.cached(ggufread.read(path), path)


def whole(name: str, value: object, top: int) -> int:
    """``value`` as a whole number from 0 to ``top − 1``, or one line naming the option."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < top:
        raise InputError(Message("model.must_whole_number", top=top - 1, value=repr(value)), arg=name)
    return value


def label(ck: Checkpoint, i: int) -> str:
    """A token as the page shows it: its text with a leading space drawn as ``␣``, control characters escaped."""
    text = ck.token(i)
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text.replace(" ", "␣"))
    return shown or "∅"


def prepare(
    values: torch.Tensor,
    text: str = "The capital of France is",
    layer: int = 3,
    head: int = 5,
    model: str | Path | None = None,
    **unknown: Any,
) -> dict[str, Any]:
    """Read the model, tokenize, run the untraced layers; ``values`` (the engine's example) are not used."""
    if unknown:
        raise InputError(Message("lessons.takes_no_option", name=repr("model"), unknown=", ".join(sorted(unknown))))
    if not isinstance(text, str) or not text.strip():
        raise InputError(Message("model.must_non_empty_sentence"), arg="text")
    ck = load(model)
    cfg = ck.config
    layer, head = whole("layer", layer, cfg.layers), whole("head", head, cfg.heads)
    ids = ck.encode(text)
    if not 1 <= len(ids) <= MAX_TEXT_TOKENS:
        raise InputError(
            Message("model.makes_tokens_lesson_traces", n_ids=len(ids), max_text_tokens=MAX_TEXT_TOKENS), arg="text"
        )
    run = forward.run(ck, ids, layer)
    return {"ck": ck, "ids": ids, "layer": layer, "head": head, "run": run, "text": text, "model": model}


def head_weights(ck: Checkpoint, layer: int, head: int) -> dict[str, torch.Tensor]:
    """The head's slices of the layer's weights, laid out ``(in, out)`` as the projections read them."""
    cfg = ck.config
    dh, group = cfg.head_dim, head // (cfg.heads // cfg.kv_heads)
    q, g = slice(head * dh, (head + 1) * dh), slice(group * dh, (group + 1) * dh)
    w = {n: torch.from_numpy(ck.weight(f"{layer}.{n}")) for n in ("attn_norm", "q", "k", "v", "o")}
    return {
        "g": w["attn_norm"],
        "W_query": w["q"][q].T.contiguous(),
        "W_key": w["k"][g].T.contiguous(),
        "W_value": w["v"][g].T.contiguous(),
        "W_out": w["o"][:, q].T.contiguous(),
    }


def build(
    inputs: torch.Tensor,
    tokens: list[str],
    query: int,
    dtype: torch.dtype,
    meta: dict[str, Any],
    **prepared: Any,
) -> Trace:
    """Trace the chosen head of the chosen layer (``inputs``, ``tokens`` and ``query`` of the example unused)."""
    ck: Checkpoint = prepared["ck"]
    cfg, run, layer, head = ck.config, prepared["run"], prepared["layer"], prepared["head"]
    ids: list[int] = prepared["ids"]
    t, dh = len(ids), cfg.head_dim
    group = head // (cfg.heads // cfg.kv_heads)
    rec = Recorder(dtype)
    w = head_weights(ck, layer, head)
    with rec.stage("inputs"):
        x = rec.input("x", run.x, "ik", symbol=r"x^{(<i>)}_{<k>}", text="x[<i>,<k>]")
        g = rec.input("g", w["g"], "k", symbol=r"g_{<k>}", text="g[<k>]")
        syms = {"W_query": "W^{Q}", "W_key": "W^{K}", "W_value": "W^{V}", "W_out": "W^{O}"}
        ws = {n: rec.input(n, w[n], "kc", symbol=rf"{s}_{{<k,c>}}", text=f"{n}[<k>,<c>]") for n, s in syms.items()}
        pos = rec.input("pos", torch.arange(t, dtype=torch.float64), "i", symbol=r"m_{<i>}", text="<i> − 1")
        freq = cfg.rope_base ** (-torch.arange(dh // 2, dtype=torch.float64) * 2 / dh)
        theta = rec.input("theta", freq, "p", symbol=r"\theta_{<p>}", text=f"{cfg.rope_base:g}^(−2(<p>−1)/{dh})")
        _, up = causal_masks(rec, t)
    with rec.stage("norm"):
        h = rms_norm(rec, x, g, cfg.eps)
    with rec.stage("projections"):
        q = projection(rec, "q", h, ws["W_query"], (), r"q^{(<i>)}_{<c>}", syms["W_query"], xsym=r"h^{(<i>)}")
        k = projection(rec, "k", h, ws["W_key"], (), r"k^{(<i>)}_{<c>}", syms["W_key"], xsym=r"h^{(<i>)}")
        v = projection(rec, "v", h, ws["W_value"], (), r"v^{(<i>)}_{<c>}", syms["W_value"], xsym=r"h^{(<i>)}")
    with rec.stage("rotation"):
        _, cos, sin = angles(rec, "rope.", pos, theta)
        rq = rotate(rec, "rope.q", q, cos, sin, cfg.pairs, "q")
        rk = rotate(rec, "rope.k", k, cos, sin, cfg.pairs, "k")
    with rec.stage("attention"):
        omega = scores(rec, "omega", rq, rk, (), r"\omega_{<i,j>}")
        alpha = masked_softmax(rec, omega, up, sqrt_dk(rec, rk))
        z = context(rec, "z", alpha, v, ())
    with rec.stage("output"):
        projection(rec, "out", z, ws["W_out"], (), r"o^{(<i>)}_{<c>}", syms["W_out"], xsym=r"z^{(<i>)}")
    labels = [label(ck, i) for i in ids]
    with rec.stage("heads"):
        rec.input(
            "heads.alpha", run.weights, "hij", symbol=r"\alpha^{(<h>)}_{<i,j>}",
            text="the weights of head <h> (0-based: <h> − 1), from the float64 forward pass",
        )  # fmt: skip
    with rec.stage("next"):
        said = label(ck, run.next_id)
        shown = said if all(c.isalnum() or c in "␣.,'-" for c in said) else f"token {run.next_id}"
        rec.constant(
            "next.p", run.next_p, symbol=rf"p(\text{{{shown}}})", text=f"p({said}) after all {cfg.layers} layers"
        )
    info = {
        "model": {
            "name": cfg.name,
            "source": source_name(prepared["model"]),
            "kinds": sorted(set(ck.kinds.values())),
            "layers": cfg.layers,
            "width": cfg.width,
            "heads": cfg.heads,
            "kv_heads": cfg.kv_heads,
            "head_dim": dh,
            "rope_base": cfg.rope_base,
            "pairs": cfg.pairs,
        },
        "text": prepared["text"],
        "ids": ids,
        "layer": layer,
        "head": head,
        "group": group,
        "next": {"id": run.next_id, "token": said},
    }
    meta = {**meta, "n_tokens": t, "dim": cfg.width, "default_query": t, "variant": variant(prepared)}
    return rec.trace({**meta, "lesson": "model", "tokens": labels, "query": t, "stages": list(STAGES), **info})


def source_name(model: str | Path | None) -> str:
    """The model's file or folder name as a trace records it: never the path, which names the reader's machine."""
    from tracer.lessons.model import fetch

    return fetch.model_path().name if model is None else Path(model).name


def variant(prepared: dict[str, Any]) -> str:
    """``""`` for the default sentence, layer, head and model; else a short hash of them (the reports' folder)."""
    own = (prepared["text"], prepared["layer"], prepared["head"], prepared["model"])
    if own == (DEFAULTS.text, DEFAULTS.layer, DEFAULTS.head, DEFAULTS.model):
        return ""
    return hashlib.sha256(json.dumps([str(x) for x in own]).encode("utf-8")).hexdigest()[:10]


def rms_norm(rec: Recorder, x: Any, g: Any, eps: float) -> Any:
    """``h[i,k] = x[i,k] / sqrt(mean_k x[i,k]² + ε) · g[k]``, each operation recorded."""
    width = int(x.data.shape[1])
    sq = rec.elementwise(
        "mul", "norm.sq", [x("i", "k"), x("i", "k")], "ik",
        symbol=r"(x^{(<i>)}_{<k>})^2", latex=r"(x^{(<i>)}_{<k>})^2", text="x[<i>,<k>] × x[<i>,<k>]",
    )  # fmt: skip
    total = rec.contract(
        "norm.ss", sq("i", "k"), None, "ik", "k",
        symbol=r"S^{(<i>)}", latex=r"S^{(<i>)} = \sum_k (x^{(<i>)}_k)^2", text="Σ_k norm.sq[<i>,k]",
    )  # fmt: skip
    n = rec.constant("norm.n", float(width), symbol=r"d", text=f"d = {width}")
    mean = rec.elementwise(
        "div", "norm.mean", [total("i"), n()], "i",
        symbol=r"\overline{x^2}^{(<i>)}", latex=r"\overline{x^2}^{(<i>)} = S^{(<i>)} / d", text="norm.ss[<i>] / d",
    )  # fmt: skip
    e = rec.constant("norm.eps", eps, symbol=r"\varepsilon", text=f"ε = {eps:g}")
    shifted = rec.elementwise(
        "add", "norm.var", [mean("i"), e()], "i",
        symbol=r"\overline{x^2}^{(<i>)} + \varepsilon", latex=r"\overline{x^2}^{(<i>)} + \varepsilon",
        text="norm.mean[<i>] + ε",
    )  # fmt: skip
    root = rec.elementwise(
        "sqrt", "norm.rms", [shifted("i")], "i",
        symbol=r"\mathrm{rms}^{(<i>)}", latex=r"\mathrm{rms}^{(<i>)} = \sqrt{\overline{x^2}^{(<i>)} + \varepsilon}",
        text="sqrt(norm.var[<i>])",
    )  # fmt: skip
    unit = rec.elementwise(
        "div", "norm.unit", [x("i", "k"), root("i")], "ik",
        symbol=r"\hat x^{(<i>)}_{<k>}", latex=r"\hat x^{(<i>)}_{<k>} = x^{(<i>)}_{<k>} / \mathrm{rms}^{(<i>)}",
        text="x[<i>,<k>] / norm.rms[<i>]",
    )  # fmt: skip
    return rec.elementwise(
        "mul", "h", [unit("i", "k"), g("k")], "ik",
        symbol=r"h^{(<i>)}_{<k>}", latex=r"h^{(<i>)}_{<k>} = \hat x^{(<i>)}_{<k>}\, g_{<k>}",
        text="norm.unit[<i>,<k>] × g[<k>]",
    )  # fmt: skip
