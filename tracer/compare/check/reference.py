"""The lesson's side of a check: the inputs the student's code is called on, and the lesson's trace on them.

The reference is the lesson's own pipeline (:func:`tracer.record.registry.pipeline_module`)
run with the student's weights in place of the lesson's, so a different
initialisation is never a mistake.  The inputs are the tutorial's six
tokens, widened with seeded columns when the module is built wider.
"""

from __future__ import annotations

import numpy as np
import torch

from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Role
from tracer.compare.check.roles import BIAS
from tracer.core.trace import Trace
from tracer.message import Message
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


def tensor(roles: dict[str, Role], name: str) -> torch.Tensor:
    """Role ``name``'s value as a float32 tensor."""
    return torch.tensor(roles[name].value, dtype=torch.float32)


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
    if spec.plug is None:  # a lesson without weights: its pipeline as it is
        trace: Trace = module.build(x, tokens, 2, torch.float32, meta)
        return trace
    w = {r: tensor(roles, r) for r in ("W_query", "W_key", "W_value")}
    if spec.bias and any(b in roles for b in BIAS):
        x, w = _with_bias(x, w, roles)
        meta["dim"] = x.shape[1]
    extra = spec.plug(spec, module, x, w, roles, {"kind": "student", "d_out": spec.d_out})
    trace = module.build(x, tokens, 2, torch.float32, meta, **extra)
    return trace


def checked(spec: Spec, found: dict[str, Role]) -> Trace:
    """:func:`reference` with weights a child sent: ones that name no query, key and value, or do not fit, are refused.

    The refusal is :class:`~.evidence.Malformed`: data that is not what a run
    of the check produces.
    """
    from tracer.compare.check.evidence import Malformed
    from tracer.compare.check.roles import QKV

    if spec.is_class and any(r not in found for r in QKV):
        raise Malformed(Message("check.weights_found_name_no"))
    try:
        return reference(spec, found)
    except (ValueError, IndexError, KeyError, RuntimeError, TypeError) as e:
        raise Malformed(Message("check.weights_found_do_not", type=type(e).__name__)) from None
