"""The catalogue's hypotheses: what the student's run would hold under each mistake, looked for among their tensors.

Each function takes the check's :class:`~tracer.compare.check.context.Context`,
computes the prediction of one mistake from the reference's own values
(:mod:`.variants`) and returns a :class:`Hit` when a student tensor holds it
(None otherwise).  :mod:`.catalogue` pairs each with its code and sentences.
"""

from __future__ import annotations

import math
import re
from itertools import combinations

import numpy as np

from tracer.compare.check import align, wrapper
from tracer.compare.check import variants as V
from tracer.compare.check.context import Context, Hit
from tracer.message import Message


def bias(c: Context) -> Hit | None:
    if c.spec.bias:  # the module's own biases, in the reference already (:func:`.build.own_bias`)
        return None
    for key, role in (("q", "b_query"), ("k", "b_key"), ("v", "b_value")):
        if role in c.roles and c.has(key):
            ref, axes = c.ref(key)
            b = c.roles[role].value
            if b.ndim == 2:  # the wrapper's biases, one row per head: (heads, 1, 1, d_head)
                b = b[:, None, None, :]
            hit = c.holds(ref + b, axes)
            if hit:
                return Hit(hit, (c.step(key),), {"param": c.roles[role].param})
    return None


def transposed(c: Context) -> Hit | None:
    omega, axes = c.ref("omega")
    swapped = V.swap_ij(omega, axes)
    if np.allclose(swapped, omega):
        return None  # a symmetric table (lesson simple): transposing changes nothing
    tries = [swapped, swapped / c.sqrt_dk]
    if c.causal:
        masked = V.fill(swapped, axes, -np.inf)
        tries += [masked, masked / c.sqrt_dk, V.softmax(masked / c.sqrt_dk, -1)]
    else:
        tries.append(V.softmax(swapped / c.sqrt_dk, -1))
    return c.first(tries, axes, (c.step("omega"), c.step("q"), c.step("k")))


def _scalings(c: Context, div: float) -> list[np.ndarray]:
    """What scores divided by ``div`` instead of √d_k become: the scores, masked, and each axis's softmax.

    A softmax that comes out the same as with √d_k (over an axis whose
    entries are all equal, such as the batch of two copies) says nothing
    about the scaling and is left out.
    """
    omega, axes = c.ref("omega")
    base = V.fill(omega, axes, -np.inf) if c.causal else omega
    right = dict(V.softmaxes(base / c.sqrt_dk))
    soft = [s for ax, s in V.softmaxes(base / div) if not align.close(s, right[ax])]
    return [omega / div, base / div, *soft]


def scale_wrong(c: Context) -> Hit | None:
    if not c.spec.scaled:
        return None  # a lesson that does not scale
    d = c.spec
    divisors = {"d_k": float(d.head_dim), "√d_in": math.sqrt(d.d_in), "√T": math.sqrt(c.tokens)}
    if d.multi:
        divisors = {"√d_out": math.sqrt(d.d_out), **divisors}
    axes = c.ref("omega")[1]
    for name, div in divisors.items():
        if abs(div - c.sqrt_dk) < 1e-9 or abs(div - 1) < 1e-9:
            continue
        hit = c.first(_scalings(c, div), axes, (c.step("omega"),), {"divisor": name, "value": f"{div:.4g}"})
        if hit:
            return hit
    return None


def scale_inverted(c: Context) -> Hit | None:
    if not c.spec.scaled or abs(c.sqrt_dk - 1) < 1e-9:
        return None
    return c.first(_scalings(c, 1 / c.sqrt_dk), c.ref("omega")[1], (c.step("omega"),))


def scale_missing(c: Context) -> Hit | None:
    if not c.spec.scaled:
        return None
    soft = _scalings(c, 1.0)[2:]
    return c.first(soft, c.ref("omega")[1], (c.step("omega"), c.step("alpha")))


def sum_normalised(c: Context) -> Hit | None:
    omega, axes = c.ref("omega")
    base = omega / c.sqrt_dk
    if c.causal:
        base = V.fill(base, axes, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tries = [base / base.sum(axis=axes.index("j"), keepdims=True)]
    return c.first(tries, axes, (c.step("alpha"),))


def softmax_dim(c: Context) -> Hit | None:
    omega, axes = c.ref("omega")
    base = V.fill(omega, axes, -np.inf) if c.causal else omega
    base = base / c.sqrt_dk if c.spec.scaled else base
    j = axes.index("j")
    tries = [s for ax, s in V.softmaxes(base) if ax != j]
    return c.first(tries, axes, (c.step("alpha"),))


def mask_after(c: Context) -> Hit | None:
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    weights = V.softmax(omega / c.sqrt_dk, -1)
    return c.first([V.fill(weights, axes, 0.0)], axes, (c.step("alpha"), c.step("masked_scaled")))


def mask_zero(c: Context) -> Hit | None:
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    zero = V.fill(omega, axes, 0.0)
    tries = [zero, zero / c.sqrt_dk, V.softmax(zero / c.sqrt_dk, -1)]
    return c.first(tries, axes, (c.step("masked"), c.step("masked_scaled")))


def _masked_from(c: Context, diagonal: int | None) -> Hit | None:
    """A hit when the student's scores or weights are masked from ``diagonal`` on (None: not masked at all)."""
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    if diagonal is None:  # unmasked scores are held by correct code too: only the weights tell
        tries = [V.softmax(omega / c.sqrt_dk, -1)]
    else:
        hidden = V.fill(omega, axes, -np.inf, diagonal=diagonal)
        tries = [hidden, hidden / c.sqrt_dk, V.softmax(hidden / c.sqrt_dk, -1)]
    return c.first(tries, axes, (c.step("masked"), c.step("masked_scaled")))


def mask_diagonal(c: Context) -> Hit | None:
    return _masked_from(c, 0)


def mask_shifted(c: Context) -> Hit | None:
    return _masked_from(c, 2)


def mask_missing(c: Context) -> Hit | None:
    """No mask at all, or (several heads) no mask in some of the heads: their weights are the plain softmax."""
    whole = _masked_from(c, None)
    if whole is not None or c.spec.heads < 2 or not c.causal:
        return None if whole is None else Hit(whole.seen, whole.steps, {"where": Message("word.nowhere")})
    omega, axes = c.ref("omega")
    h = axes.index("h")
    masked = V.softmax(V.fill(omega, axes, -np.inf) / c.sqrt_dk, -1)
    plain = V.softmax(omega / c.sqrt_dk, -1)
    for size in range(1, c.spec.heads):
        for some in combinations(range(c.spec.heads), size):
            pick = np.isin(np.arange(omega.shape[h]), some).reshape([-1 if d == h else 1 for d in range(omega.ndim)])
            hit = c.first([np.where(pick, plain, masked)], axes, (c.step("masked"), c.step("alpha")))
            if hit is not None:
                heads = ", ".join(str(n + 1) for n in some)
                return Hit(hit.seen, hit.steps, {"where": Message("word.in_heads", heads=heads)})
    return None


_SIZES = re.compile(r"size of tensor|must match|shape .* doesn't match|cannot be broadcast|expanded size", re.I)


def mask_not_cut(c: Context) -> Hit | None:
    e = c.short_error
    if e is None or not _SIZES.search(str(e)):
        return None
    line = e.details.strip().splitlines()[-1] if e.details.strip() else str(e)
    return Hit(None, (c.step("masked_scaled"),), {"tokens": str(c.spec.short), "error": line}, where=c.short_where)


def dropout_scores(c: Context) -> Hit | None:
    """Dropout on the raw scores, or on the scaled ones, before the mask."""
    omega, _ = c.ref("omega")
    first = omega[(0,) * (omega.ndim - 2)]
    return _dropped_scores(c, (first, first / c.sqrt_dk), (c.step("omega"), c.step("dropped")))


def dropout_masked(c: Context) -> Hit | None:
    """Dropout on the masked scores, scaled or not, right before the softmax.

    A dropped score becomes 0 instead of leaving the softmax, and a dropped
    hidden one becomes NaN (−∞ × 0); the hidden entries say nothing about
    the draw and are skipped (:func:`.variants.dropped_like`).
    """
    if not c.causal:
        return None
    omega, axes = c.ref("omega")
    hidden = V.fill(omega, axes, -np.inf)
    first = hidden[(0,) * (hidden.ndim - 2)]
    return _dropped_scores(c, (first / c.sqrt_dk, first), (c.step("masked"), c.step("dropped")))


def _dropped_scores(c: Context, bases: tuple[np.ndarray, ...], steps: tuple[str, ...]) -> Hit | None:
    """The first training-mode tensor that is one of ``bases`` (one sample's table) under dropout."""
    scale = 1 / (1 - c.spec.dropout)
    for base in bases:
        for s in c.train:
            if s.value.ndim >= 2 and V.dropped_like(s.value[(0,) * (s.value.ndim - 2)], base, scale):
                return Hit(s, steps)
    return None


def dropout_unscaled(c: Context) -> Hit | None:
    if not c.has("dropped"):
        return None
    alpha = c.ref("alpha")[0]
    first = alpha[(0,) * (alpha.ndim - 2)]
    firsts = [(s, s.value[(0,) * (s.value.ndim - 2)]) for s in c.train if s.value.ndim >= 2]
    scale = 1 / (1 - c.spec.dropout)
    if any(V.dropped_like(v, first, scale) for _, v in firsts):
        return None  # the kept weights are scaled (a hand-written dropout may hold the unscaled product first)
    for s, v in firsts:
        if V.dropped_like(v, first, 1.0):
            return Hit(s, (c.step("dropped"), "dropout.kept"), {"scale": f"{1 / (1 - c.spec.dropout):g}"})
    return None


def dropout_in_eval(c: Context) -> Hit | None:
    if not c.spec.dropout:
        return None
    alpha = c.ref("alpha")[0]
    first = alpha[(0,) * (alpha.ndim - 2)]
    for s in c.seen:
        v = s.value
        if v.ndim >= 2 and V.dropped_like(v[(0,) * (v.ndim - 2)], first, 1 / (1 - c.spec.dropout)):
            return Hit(s, (c.step("alpha"), c.step("z")), {"p": f"{c.spec.dropout:g}"})
    return None


def heads_shared(c: Context) -> Hit | None:
    """The wrapper's heads have equal weights (one module repeated in the list, or copied)."""
    same = wrapper.shared(c.roles) if c.spec.form == "wrap" else ""
    return Hit(None, (c.step("q"), c.step("k"), c.step("v")), {"heads": same}) if same else None


def heads_concat_dim(c: Context) -> Hit | None:
    """The wrapper's head outputs joined along another axis than the last (``torch.cat(..., dim=0 or 1)``)."""
    if c.spec.form != "wrap":
        return None
    z, axes = c.ref("z")
    heads = list(z)
    for dim in range(z.ndim - 2):  # the batch and token axes of one head's output
        hit = c.first([np.concatenate(heads, axis=dim)], axes[1:], (c.step("z"), c.step("concat")))
        if hit is not None:
            return Hit(hit.seen, hit.steps, {"dim": str(dim)})
    return None


def heads_merge(c: Context) -> Hit | None:
    if not c.has("concat"):
        return None
    z = c.ref("z")[0]
    axes = c.ref("concat")[1]
    return c.first([V.merge_untransposed(z)], axes, (c.step("z"), c.step("concat")))


def out_missing(c: Context) -> Hit | None:
    if not c.has("concat") or c.final is None:
        return None
    concat, axes = c.ref("concat")
    return c.first([concat], axes, (c.step("concat"), c.step("out")), only=[c.final])


def out_per_head(c: Context) -> Hit | None:
    if "W_out_other" not in c.roles:
        return None
    z = c.ref("z")[0]
    axes = c.ref("out")[1]
    w = c.roles["W_out_other"].value
    b = c.roles["b_out_other"].value if "b_out_other" in c.roles else 0.0
    tries = []
    for m in (w.T, w):
        if m.shape[0] == z.shape[-1]:
            tries.append(V.merge(z @ m + b))
    return c.first(tries, axes, (c.step("z"), c.step("out")), {"param": c.roles["W_out_other"].param})


def values_scores(c: Context) -> Hit | None:
    omega, _ = c.ref("omega")
    values = c.ref("v")[0] if c.has("v") else c.ref("x")[0]
    zaxes = c.ref("z")[1]
    tries = [V.weigh(omega, values), V.weigh(omega / c.sqrt_dk, values)]
    if c.causal:
        tries.append(V.weigh(V.fill(omega, c.ref("omega")[1], -np.inf) / c.sqrt_dk, values))
    return c.first(tries, zaxes, (c.step("z"), c.step("omega")))
