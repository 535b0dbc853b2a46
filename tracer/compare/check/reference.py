"""The lesson's side of a check: the inputs the student's code is called on, and the lesson's trace on them.

The reference is the lesson's own pipeline (:func:`tracer.record.registry.pipeline_module`)
run with the student's weights in place of the lesson's, so a different
initialisation is never a mistake.  The inputs are the tutorial's six
tokens, widened with seeded columns when the module is built wider.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Role
from tracer.compare.check.roles import BIAS
from tracer.core.trace import Trace
from tracer.record import registry
from tracer.record.inputs import tutorial


def embeddings(d_in: int) -> torch.Tensor:
    """The six tokens as ``d_in``-wide embeddings: the tutorial's where they fit, seeded ones beyond.

    For ``d_in <= 3`` the tutorial's first ``d_in`` columns; wider, its three
    columns then ``d_in - 3`` columns drawn from ``torch.rand`` under seed 123,
    rounded to two decimals as the tutorial's are.
    """
    x = torch.tensor(tutorial()[0], dtype=torch.float32)
    if d_in <= x.shape[1]:
        return x[:, :d_in].contiguous()
    g = torch.Generator().manual_seed(123)
    more = torch.round(torch.rand((x.shape[0], d_in - x.shape[1]), generator=g) * 100) / 100
    return torch.cat((x, more.to(torch.float32)), dim=1)


def inputs(spec: Spec) -> torch.Tensor:
    """The tensor the student's code is called on: the six tokens (twice, stacked, for a batch)."""
    x = embeddings(spec.d_in)
    return torch.stack((x, x)) if spec.batch else x


def _options(spec: Spec) -> dict[str, Any]:
    """The lesson options the reference is built with (lessons window, gqa and rope have their own)."""
    if spec.name == "window":
        return {"window": spec.args[3]}
    if spec.name == "gqa":
        return {"heads": spec.heads, "groups": spec.args[-1]}
    if spec.name == "rope":
        return {"style": spec.style}
    return {}


def _with_bias(
    x: torch.Tensor, w: dict[str, torch.Tensor], roles: dict[str, Role]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The inputs with a last column of ones, each weight with its bias as a last row: ``[x 1] [W; b] = x W + b``.

    A module whose projections have biases by design (a published class
    whose constructor takes no ``qkv_bias``: the Annotated Transformer's
    four ``nn.Linear``, minGPT's ``c_attn``, ``nn.MultiheadAttention``'s
    ``in_proj_bias``) computes ``x W + b``; every lesson's pipeline computes
    ``x W``, so the bias rides in as the weight of one more input that is
    always 1.  A role without a bias gets a row of zeros.  The wrapper's
    weights are stacked per head, ``(heads, d_in, d_head)``, their biases
    ``(heads, d_head)``.
    """
    ones = torch.ones(*x.shape[:-1], 1, dtype=x.dtype)
    out = {}
    for r, weight in w.items():
        b = roles[BIAS[r]].value if BIAS[r] in roles else np.zeros(weight.shape[:-2] + weight.shape[-1:])
        row = torch.tensor(b, dtype=weight.dtype).unsqueeze(-2)
        out[r] = torch.cat((weight, row), dim=-2)
    return torch.cat((x, ones), dim=-1), out


def reference(spec: Spec, roles: dict[str, Role]) -> Trace:
    """The lesson's trace, computed with the student's weights where the student has them."""
    module = registry.pipeline_module(spec.name)
    _, tokens = tutorial()
    x = embeddings(spec.d_in)
    meta = {"dtype": "float32", "n_tokens": x.shape[0], "dim": x.shape[1], "source": {"kind": "tutorial"}}
    if spec.name == "simple":
        trace: Trace = module.build(x, tokens, 2, torch.float32, meta)
        return trace
    w = {r: torch.tensor(roles[r].value, dtype=torch.float32) for r in ("W_query", "W_key", "W_value")}
    if spec.bias and any(b in roles for b in BIAS):
        x, w = _with_bias(x, w, roles)
        meta["dim"] = x.shape[1]
    info = {"kind": "student", "d_out": spec.d_out}
    if spec.name == "trainable":
        trace = module.build(x, tokens, 2, torch.float32, meta, weights=w, weights_meta=info)
        return trace
    if spec.name == "multihead":  # any number of heads (the lesson's option is only d_out)
        extra = module.with_heads(x, spec.d_out, spec.heads)
    else:
        extra = module.prepare(x, d_out=spec.d_out, **_options(spec))
    if spec.form == "wrap":
        extra["wrap"] = w
        if "W_out" in roles:
            out = ("W_out", "b_out")
            extra["wrap_out"] = {r: torch.tensor(roles[r].value, dtype=torch.float32) for r in out if r in roles}
    elif spec.name == "causal":
        extra.update(weights=w, weights_meta=info, module=w)
    elif spec.name in ("window", "rope"):
        extra.update(weights=w, weights_meta=info)
    elif spec.name == "kvcache":
        extra.update(weights=w, weights_meta=info, spans=list(spec.calls))
    elif spec.name == "gqa":
        extra["weights"] = {**extra["weights"], **w}
        if "W_out" in roles:
            extra["weights"]["W_out"] = torch.tensor(roles["W_out"].value, dtype=torch.float32)
    else:
        split = dict(extra["split"])
        split.update(w)
        if "W_out" in roles:
            split["W_out"] = torch.tensor(roles["W_out"].value, dtype=torch.float32)
            bias = roles["b_out"].value if "b_out" in roles else np.zeros(spec.d_out)
            split["b_out"] = torch.tensor(bias, dtype=torch.float32)
        extra["split"] = split
    trace = module.build(x, tokens, 2, torch.float32, meta, **extra)
    return trace
