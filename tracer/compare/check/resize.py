"""A second build with other sizes: a module that hard-codes its sizes matches only at the lesson's own.

A module that writes ``nn.Dropout(0.5)``, a ``6 x 6`` mask or ``nn.Linear(3, 2)``
instead of using its constructor's arguments computes the lesson exactly at
the lesson's sizes.  So once the stages match, :func:`differs` builds the
module again with other sizes (``d_in + 1``, ``d_out`` + one per head,
``context_length = 9``, ``dropout = 0``), calls it on seeded random inputs of
7 tokens (a sequence shorter than the context, so the mask must be cut), in
eval mode and then in training mode (with ``dropout = 0`` both must give the
lesson's result), and compares the result with the lesson's attention
computed here in float64 from the second module's own weights.  The answer
is a sentence saying what went wrong, or None.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from tracer.compare.check import align, forwardargs, roles, rotations, student, wrapper
from tracer.compare.check.evidence import MODES, Other
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Role
from tracer.errors import InputError

CONTEXT = 9
TOKENS = 7
SEED = 7


MODELLED = ("trainable", "causal", "multihead", "rope")
"""The lessons whose result :func:`_reference` computes; the others (window, gqa) are not rebuilt.

Lesson ``rope`` is rebuilt two components wider (RoPE turns pairs, so the
width stays even) and its queries and keys are turned as the checked
pairing turns them (``--rope-style``), from position 0, ``θ_p = 10000^(−2(p−1)/d)``
at the new width: a frequency table or a rotation written for ``d_out = 4``
shows here.
"""


def sizes(spec: Spec) -> dict[str, Any]:
    """The second build's sizes (the square modules' ``d_in`` follows their ``d_out``)."""
    d_out = spec.d_out + (2 if spec.name == "rope" else spec.heads)  # RoPE's pairs need an even width
    d_in = d_out if spec.d_in == spec.d_out else spec.d_in + 1
    return {"d_in": d_in, "d_out": d_out, "context_length": CONTEXT, "dropout": 0.0, "num_heads": spec.heads}


def describe(spec: Spec, got: dict[str, Any]) -> str:
    """``d_in=4, d_out=3, context_length=9, dropout=0.0, 7 tokens`` (only the lesson's own arguments)."""
    names = [n for n in ("d_in", "d_out", "context_length", "dropout", "num_heads") if n in spec.signature]
    return ", ".join(f"{n}={got[n]}" for n in names) + f", {TOKENS} tokens"


ZH = (
    (r"^building it raised (.*)$", r"构建时抛出了 \1"),
    (r"^it cannot be built \((.*)\)$", r"无法构建（\1）"),
    (r"^its weights do not follow the sizes \((.*)\)$", r"它的权重没有随尺寸改变（\1）"),
    (r"^in eval mode it (raised|returned) (.*)$", r"在评估模式下\1 \2"),
    (r"^in train mode it (raised|returned) (.*)$", r"在训练模式下\1 \2"),
    (r"^its result has shape (.*) instead of (.*)$", r"结果的形状是 \1，而不是 \2"),
    (
        r"^with dropout=0.0 in training mode its result still differs \(by up to (.*)\), as if its dropout rate "
        r"were fixed$",
        r"训练模式下 dropout=0.0 时结果仍然不同（最多相差 \1），就像它的 dropout 比率是写死的",
    ),
    (r"^its result differs from the lesson's by up to (.*)$", r"结果与课程的结果最多相差 \1"),
)
"""What :func:`judge` says, in Chinese (the student's own exception text stays as it is)."""


def chinese(sizes_said: str, detail: str) -> tuple[str, str]:
    """:func:`judge`'s ``(sizes, what went wrong)`` in Chinese."""
    import re

    for pattern, said in ZH:
        if re.match(pattern, detail):
            detail = re.sub(pattern, said, detail).replace("raised", "抛出了").replace("returned", "返回了")
            break
    return sizes_said.replace(f", {TOKENS} tokens", f"，{TOKENS} 个词元"), detail


def differs(build: Any, spec: Spec) -> tuple[str, str] | None:
    """``(sizes, what went wrong)`` when the module rebuilt with :func:`sizes` does not compute the lesson."""
    return judge(spec, gather(build, spec))


def gather(build: Any, spec: Spec, mask: str = "mask") -> Other:
    """The student's half: build the module at :func:`sizes`, find its weights, call it in eval and train mode.

    A mask it requires is given in the form chosen at the lesson's sizes
    (``mask``, :mod:`.maskforms`).

    Only data comes back (:class:`Other`); :func:`judge` compares it with the
    lesson computed from those weights on inputs of its own.
    """
    got = sizes(spec)
    try:
        module = build(got)
    except student.StudentError as e:
        return Other(f"building it raised {e.cause}")
    except InputError as e:
        return Other(f"it cannot be built ({e})")
    x = _inputs(spec, got["d_in"])
    try:
        found = _roles(module, spec, got["d_in"], got["d_out"])
    except InputError as e:
        return Other(f"its weights do not follow the sizes ({e})")
    results: dict[str, np.ndarray | str] = {}
    try:
        given = forwardargs.bind(module, spec, got["d_out"], mask)[0]  # its further arguments, made at the new sizes
    except InputError as e:  # a factory that builds another forward at these sizes
        return Other(f"it cannot be built ({e})")
    for mode in MODES:
        module.train(mode == "train")
        run = student.call(module, x, SEED, given)
        out = student.returned(run.output)
        if run.error is not None:
            results[mode] = f"raised {run.error.cause}"
        elif not isinstance(out, torch.Tensor) or not out.is_floating_point():
            results[mode] = f"returned {type(out).__name__}"
        else:
            results[mode] = out.detach().to(torch.float64).numpy().copy()
    module.eval()
    return Other("", found, results)


def judge(spec: Spec, other: Other) -> tuple[str, str] | None:
    """The judge's half: the second build's results against the lesson computed here from its weights."""
    got = sizes(spec)
    said = describe(spec, got)
    if other.problem:
        return said, other.problem
    x = _inputs(spec, got["d_in"])
    try:
        want = _reference(spec, other.roles, x.to(torch.float64).numpy(), got["d_out"])
    except (KeyError, ValueError, IndexError) as e:  # weights that do not fit the sizes asked for
        return said, f"its weights do not follow the sizes ({type(e).__name__})"
    for mode in MODES:
        value = other.results.get(mode, "returned nothing")
        if isinstance(value, str):
            return said, f"in {mode} mode it {value}"
        if value.shape != want.shape:
            return said, f"its result has shape {tuple(value.shape)} instead of {tuple(want.shape)}"
        if not align.close(value, want):
            err = align.error(value, want)
            if mode == "train":
                return said, (
                    f"with dropout=0.0 in training mode its result still differs (by up to {err:.3g}), "
                    "as if its dropout rate were fixed"
                )
            return said, f"its result differs from the lesson's by up to {err:.3g}"
    return None


def _inputs(spec: Spec, d_in: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(SEED)
    shape = (2, TOKENS, d_in) if spec.batch else (TOKENS, d_in)
    return torch.rand(shape, generator=g, dtype=torch.float32)


def _roles(module: torch.nn.Module, spec: Spec, d_in: int, d_out: int) -> dict[str, Role]:
    heads = wrapper.heads_of(module, spec.heads) if spec.multi else None
    if heads is not None:
        found = wrapper.assign(heads[0], heads[1], d_in, d_out)
        found.update(wrapper.out_proj(module, heads[0], found["W_query"].value.shape[-1] * spec.heads))
        return {"form": Role("form", "wrap", ""), **found}
    return roles.assign(module, d_in, d_out, out_proj=spec.multi)


def _softmax(a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        out: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return out


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        t = s.shape[-1]
        s = np.where(np.triu(np.ones((t, t), dtype=bool), 1), -np.inf, s)
    out: np.ndarray = _softmax(s) @ v
    return out


def _reference(spec: Spec, found: dict[str, Role], x: np.ndarray, d_out: int) -> np.ndarray:
    """The lesson's result in float64 with the second module's weights (dropout off)."""
    causal = spec.name in ("causal", "multihead", "rope")

    def proj(r: str, w: np.ndarray) -> np.ndarray:
        b = found.get(roles.BIAS[r])
        out: np.ndarray = x @ w + (b.value if b is not None else 0.0)
        return out

    if "form" in found:  # the wrapper: each head its own full attention, joined along the last axis
        outs = []
        for h in range(found["W_query"].value.shape[0]):
            q, k, v = (x @ found[r].value[h] for r in roles.QKV)
            outs.append(_attend(q, k, v, causal))
        joined = np.concatenate(outs, axis=-1)
        if "W_out" in found:  # the bonus wrapper's projection over all heads
            joined = joined @ found["W_out"].value + (found["b_out"].value if "b_out" in found else 0.0)
        return joined
    q, k, v = (proj(r, found[r].value) for r in roles.QKV)
    if spec.name == "rope":
        q, k = _turned(q, spec.style or "half"), _turned(k, spec.style or "half")
    if spec.name != "multihead":  # one head, no output projection
        return _attend(q, k, v, causal)
    b, t, _ = q.shape
    dh = d_out // spec.heads
    hq, hk, hv = (a.reshape(b, t, spec.heads, dh).transpose(0, 2, 1, 3) for a in (q, k, v))
    z = _attend(hq, hk, hv, causal).transpose(0, 2, 1, 3).reshape(b, t, d_out)
    if "W_out" in found:
        z = z @ found["W_out"].value + (found["b_out"].value if "b_out" in found else 0.0)
    return z


def _turned(x: np.ndarray, style: str) -> np.ndarray:
    """RoPE on ``x``, ``(b, T, d)`` or ``(T, d)``: token ``i`` (from 0) turned by ``i θ_p``, paired by ``style``."""
    t, d = x.shape[-2], x.shape[-1]
    angle = np.arange(t)[:, None] * (rotations.BASE ** (-2.0 * np.arange(d // 2) / d))[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    if x.ndim == 2:
        return rotations.turn(x, cos, sin, style)
    return np.stack([rotations.turn(row, cos, sin, style) for row in x])
