"""Weights for the lessons with trainable projections, built as the book builds them.

Every construction runs inside ``torch.random.fork_rng`` so tracing a lesson
never disturbs the caller's random state.

* ``rand``: ``torch.manual_seed(123)``, then ``W_query``, ``W_key``,
  ``W_value`` each ``torch.rand(d_in, d_out)``, in that order.
* ``linear``: ``torch.manual_seed(789)``, then three bias-free
  ``nn.Linear(d_in, d_out)`` layers built in the order query, key, value; a
  layer computes ``x @ weight.T``, so ``W_query = layer.weight.T``.
* a file: ``.json`` (``{"W_query": [[…]], "W_key": …, "W_value": …}``, each
  d_in x d_out), ``.pt`` (a dict of such tensors, ``weights_only``) or
  ``.npz`` (arrays named ``W_query``, ``W_key``, ``W_value``).
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from tracer.core import limits
from tracer.core.files import quoted
from tracer.errors import InputError
from tracer.message import Message, shortened
from tracer.record import untrusted

NAMES = ("W_query", "W_key", "W_value")
RAND_SEED = 123
"""The book's seed before its three ``torch.rand`` weight matrices."""
LINEAR_SEED = 789
"""The book's seed before its ``nn.Linear`` self-attention layers."""
MODULE_SEED = 123
"""The book's seed before its compact causal and multi-head modules, and before its dropout example."""


def rand(d_in: int, d_out: int, seed: int = RAND_SEED) -> dict[str, torch.Tensor]:
    """The book's ``torch.rand`` weights (seed 123, drawn query, key, value)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return {name: torch.rand(d_in, d_out) for name in NAMES}


def linear_layers(d_in: int, d_out: int, seed: int, count: int = 1, bias: bool = False) -> list[Layer]:
    """``count`` groups of query, key, value ``nn.Linear(d_in, d_out)`` layers, drawn in that order after one seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return [draw_linear(d_in, d_out, bias) for _ in range(3 * count)]


class Layer(NamedTuple):
    """The parameters of one ``nn.Linear`` layer: ``weight`` is d_out x d_in, ``bias`` d_out or None."""

    weight: torch.Tensor
    bias: torch.Tensor | None


def draw_linear(d_in: int, d_out: int, bias: bool = True) -> Layer:
    """The weights ``nn.Linear(d_in, d_out, bias)`` draws from torch's generator, the same on every CPU.

    ``nn.Linear`` draws ``uniform_(-b, b)`` with ``b = 1/sqrt(d_in)`` (Kaiming's
    rule with ``a = sqrt(5)``), weight first, then bias.  torch maps each raw
    24-bit draw ``r`` to ``r * (to - from) + from`` in float64 on AVX2 and
    AVX-512 CPUs but in float32 on others, so the last bit of a weight
    depended on the CPU.  Here the same draws (``torch.rand`` consumes the
    generator exactly as ``uniform_`` does) go through the float64 formula
    always: the weights of an AVX2 or AVX-512 machine, on every machine.
    """
    gain = torch.nn.init.calculate_gain("leaky_relu", math.sqrt(5))
    weight = _uniform((d_out, d_in), math.sqrt(3.0) * (gain / math.sqrt(d_in)))
    return Layer(weight, _uniform((d_out,), 1 / math.sqrt(d_in)) if bias else None)


def _uniform(shape: tuple[int, ...], bound: float) -> torch.Tensor:
    lo, hi = np.float32(-bound), np.float32(bound)
    r = torch.rand(shape, dtype=torch.float32).numpy().astype(np.float64)
    return torch.from_numpy((r * np.float64(hi - lo) + np.float64(lo)).astype(np.float32))


def linear(d_in: int, d_out: int, seed: int = LINEAR_SEED) -> dict[str, torch.Tensor]:
    """The book's ``nn.Linear`` weights (seed 789), as ``x @ W`` matrices (``weight.T``)."""
    layers = linear_layers(d_in, d_out, seed)
    return {name: layer.weight.T.contiguous() for name, layer in zip(NAMES, layers, strict=True)}


def load(path: str | Path, d_in: int) -> dict[str, torch.Tensor]:
    """Weights from a file; each must be d_in x d_out with the same d_out, all finite."""
    p = Path(path)
    untrusted.look(p, Message("weights.no_such_file", file=quoted(p)))
    ext = p.suffix.lower()
    if ext not in (".json", ".pt", ".npz"):
        raise InputError(Message("weights.unsupported_weights_file_type", ext=repr(ext or "(none)")))
    data = untrusted.read_bytes(p, "weights file")
    if ext in (".pt", ".npz"):
        untrusted.unpacked_size(
            data, quoted(p.name), "weights file"
        )  # a zip archive: its declared sizes, before anything is inflated
    raw: dict[str, Any]
    try:
        if ext == ".json":
            raw = untrusted.parse_json(data, quoted(p.name))
        elif ext == ".pt":
            raw = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        elif ext == ".npz":
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                raw = {k: z[k] for k in z.files}
        else:
            raise InputError(Message("weights.unsupported_weights_file_type", ext=repr(ext or "(none)")))
    except InputError:
        raise
    except Exception as e:  # an untrusted file can fail in many ways; all mean "unreadable"
        raise InputError(
            Message(
                "weights.not_readable_weights_file",
                file=quoted(p.name),
                error=repr(str(e).splitlines()[0] if str(e) else e),
            )
        ) from None
    if not isinstance(raw, dict):
        raise InputError(Message("weights.must_hold_w_query", file=quoted(p.name)))
    missing = [n for n in NAMES if n not in raw]
    if missing:
        raise InputError(Message("weights.lacks", file=quoted(p.name), missing=", ".join(missing)))
    out = {}
    for name in NAMES:
        t = torch.as_tensor(_numbers(raw[name], f"{quoted(p.name)}: {name}"))
        if t.ndim != 2 or t.shape[0] != d_in or t.shape[1] < 1:
            raise InputError(
                Message("weights.must_x_d_out", file=quoted(p.name), name=name, d_in=d_in, shape=str(tuple(t.shape)))
            )
        if not torch.isfinite(t).all() or not torch.isfinite(t.to(torch.float32)).all():
            raise InputError(Message("weights.values_not_finite_float32", file=quoted(p.name), name=name))
        out[name] = t
    widths = {t.shape[1] for t in out.values()}
    if len(widths) != 1:
        raise InputError(Message("weights.w_query_w_key", file=quoted(p.name)))
    return out


def _numbers(value: Any, what: str) -> np.ndarray:
    """A table of real numbers as float64: booleans, strings, complex and object arrays are refused."""
    if hasattr(value, "detach"):  # a tensor from a .pt file
        return untrusted.tensor_values(value, what)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise InputError(Message("weights.not_table_numbers", what=what)) from None
    if arr.dtype.kind not in "iuf":  # b(ool), c(omplex), O(bject), U(nicode) ...
        raise InputError(Message("weights.not_table_real_numbers", what=what, dtype=str(arr.dtype)))
    return arr.astype(np.float64)


def check_size(tokens: int, d_in: int, d_out: int, batch: int = 2) -> None:
    """Refuse a ``d_out`` whose tensors would pass the limits, before any is built.

    The lessons' largest tensors are the projections' products (T x d_in x
    d_out) and the scores' and context vectors' products (T x T x d_out),
    each for up to ``batch`` copies of the inputs.
    """
    if isinstance(d_out, bool) or not isinstance(d_out, int) or not 1 <= d_out <= limits.MAX_DIM:
        raise InputError(
            shortened(Message("weights.d_out_range", most=limits.MAX_DIM, d_out=repr(d_out)), "d_out", 200), arg="d_out"
        )
    cells = batch * tokens * max(d_in, tokens) * d_out
    if cells > limits.MAX_CELLS:
        raise InputError(
            Message(
                "weights.tokens_dims_makes_tensors",
                d_out=d_out,
                tokens=tokens,
                d_in=d_in,
                cells=cells,
                max_cells=limits.MAX_CELLS,
            ),
            arg="d_out",
        )


def choose(spec: str, d_in: int, d_out: int, tokens: int = 1) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Weights for ``--weights rand|linear|FILE`` and a description for the trace's metadata.

    ``tokens`` (the inputs' rows) lets the sizes be checked before anything is built.
    """
    if spec not in ("rand", "linear"):
        w = load(spec, d_in)
        width = int(w["W_query"].shape[1])
        check_size(tokens, d_in, width)
        return w, {"kind": "file", "name": Path(spec).name, "d_out": width}
    check_size(tokens, d_in, d_out)
    if spec == "rand":
        return rand(d_in, d_out), {"kind": "rand", "seed": RAND_SEED, "d_out": d_out}
    return linear(d_in, d_out), {"kind": "linear", "seed": LINEAR_SEED, "d_out": d_out}
