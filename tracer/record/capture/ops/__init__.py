"""Which handler records which torch function, by the function's name.

A ``TorchFunctionMode`` sees ``torch.matmul``, ``Tensor.matmul`` and
``Tensor.__matmul__`` as different callables with one name, so handlers are
looked up by name (``T`` and ``mT`` for those properties).  Factories and
initialisers only note how a tensor was made; calls that return no tensor
(``size``, ``item``, ``shape``) are not recorded; anything else that returns
tensors is recorded as an opaque step (:func:`opaque`).
"""

from __future__ import annotations

import torch

from tracer.core.trace import TENSOR, Ref
from tracer.record.capture import axes as ax
from tracer.record.capture.ops import attention, layout, norms, pointwise, products, reduce, repeat
from tracer.record.capture.ops.common import Call, Handler, as_stored
from tracer.record.capture.session import Session
from tracer.record.recorder import Var

HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(("matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "mv", "dot", "inner"), products.matmul),
    "linear": products.linear,
    **dict.fromkeys(("baddbmm", "addmm"), products.addmm),
    "einsum": products.einsum,
    **dict.fromkeys(pointwise.BINARY, pointwise.binary),
    **dict.fromkeys(pointwise.UNARY, pointwise.unary),
    **dict.fromkeys(pointwise.COMPARE, pointwise.compare),
    **dict.fromkeys(pointwise.CASTS, pointwise.cast),
    **dict.fromkeys(("masked_fill", "masked_fill_"), pointwise.masked_fill),
    "where": pointwise.where,
    **dict.fromkeys(("clamp", "clip", "clamp_", "clamp_min", "clamp_max"), pointwise.clamp),
    **dict.fromkeys(("outer", "ger"), pointwise.outer),
    **dict.fromkeys(("tril", "triu"), pointwise.triangle),
    "softmax": reduce.softmax,
    **dict.fromkeys(("sum", "mean"), reduce.total),
    **dict.fromkeys(("max", "amax"), reduce.maximum),
    **dict.fromkeys(("dropout", "dropout_"), attention.dropout),
    "scaled_dot_product_attention": attention.sdpa,
    "var": norms.variance,
    "layer_norm": norms.layer_norm,
    "gelu": norms.gelu,
    **dict.fromkeys(layout.ALIASES, layout.alias),
    **dict.fromkeys(("transpose", "swapaxes", "swapdims", "T", "t", "mT", "permute"), layout.permute),
    **dict.fromkeys(("view", "reshape", "view_as", "reshape_as", "flatten", "unflatten"), layout.reshape),
    "unsqueeze": layout.unsqueeze,
    "squeeze": layout.squeeze,
    **dict.fromkeys(("expand", "expand_as", "broadcast_to"), layout.expand),
    "__getitem__": layout.getitem,
    **dict.fromkeys(("cat", "concat", "concatenate"), layout.cat),
    "stack": layout.stack,
    **dict.fromkeys(("split", "chunk", "unbind"), layout.split),
    "repeat_interleave": repeat.repeat_interleave,
    "repeat": repeat.repeat,
    "embedding": repeat.embedding,
    "gather": repeat.gather,
}

FACTORIES = {
    "rand", "randn", "randint", "ones", "zeros", "empty", "full", "arange", "linspace", "eye", "tensor",
    "as_tensor", "from_numpy", "ones_like", "zeros_like", "empty_like", "full_like", "rand_like", "randn_like",
    "randperm", "normal", "bernoulli", "multinomial", "new_full", "new_zeros", "new_ones", "new_empty", "new_tensor",
}  # fmt: skip
INITS = {
    "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_", "uniform_", "normal_",
    "trunc_normal_", "constant_", "ones_", "zeros_", "fill_", "zero_", "orthogonal_", "eye_", "copy_",
    "bernoulli_", "random_", "exponential_",
}  # fmt: skip
DRAWS = {"dropout", "dropout_", "scaled_dot_product_attention"}
"""Ops whose handler needs the random state from just before the call."""


def opaque(s: Session, c: Call, why: str) -> None:
    """Record each tensor result of an unsupported call as one tensor step with its inputs."""
    outs = c.out if isinstance(c.out, tuple | list) else (c.out,)
    ins = [s.var(t) for t in c.tensors()]
    label = getattr(c.func, "__module__", None) or ""
    label = f"{label}.{c.key}" if label and label != "torch._C" else c.key
    if c.key not in s.opaque:
        s.opaque.append(c.key)
    for n, t in enumerate(outs):
        if not isinstance(t, torch.Tensor):
            continue
        name, info = s.begin(c.key)
        info.out_index = n if len(outs) > 1 else None
        stored = as_stored(t, s.rec.dtype)
        v = s.rec.apply(
            "opaque",
            name,
            stored,
            [Ref(i.name) for i in dict((i.name, i) for i in ins).values()],
            _axes_of(stored, ins),
            text=f"{label}(…)",
            attrs={"func": label, "why": why},
            granularity=TENSOR,
        )
        s.bind(t, v)


def _axes_of(stored: torch.Tensor, ins: list[Var]) -> tuple[str, ...]:
    """An opaque result's axes: those of an input of its very shape (complex arithmetic, a cumulative sum
    keep what each axis indexes, so the attention after them is still read by batch, tokens and heads),
    else fresh letters."""
    for i in ins:
        if tuple(i.data.shape) == tuple(stored.shape):
            return tuple(i.axes)
    return ax.default(stored.dim())
