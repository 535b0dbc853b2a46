"""An independent float64 reference for every node of every lesson, written with plain numpy.

It shares no code with the pipelines: each node is recomputed with the
textbook formula.  It runs in one of two modes, chosen by what it is given:

* **chain**: given only the leaves (inputs, weights, masks, constants), it
  computes every node from its own earlier results, in float64;
* **local**: given every recorded node, it recomputes each node from the
  *recorded* values of its operands, one operation at a time, so a float32
  trace can be checked element by element without error piling up.

For each node it also returns a magnitude: a per-element bound on the sum
of absolute values that went into the element (``Σ|x_k y_k|`` for a dot
product), so that a test can allow a few roundings of that size per element
and no more.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


class Nodes:
    """Reference values and magnitudes by node name; operands come from ``given`` when it has them."""

    def __init__(self, given: Mapping[str, np.ndarray], local: bool) -> None:
        self.local = local
        self.given = {k: np.asarray(v, dtype=np.float64) for k, v in given.items()}
        self.value: dict[str, np.ndarray] = {}
        self.mag: dict[str, np.ndarray] = {}
        self.depth: dict[str, float] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        return self.given[name] if name in self.given else self.value[name]

    def put(self, name: str, value: np.ndarray, mag: np.ndarray | None = None, depth: float = 2) -> None:
        """Record a node's reference value, its magnitude (default |value|) and how many roundings it allows."""
        value = np.asarray(value, dtype=np.float64)
        self.value[name] = value
        with np.errstate(invalid="ignore"):
            self.mag[name] = np.abs(value) if mag is None else np.asarray(mag, dtype=np.float64)
        self.depth[name] = depth


def _running(n: Nodes, name: str, terms_name: str, axis: int) -> None:
    """``name.s`` (partial sums along ``axis``) and ``name`` (the totals) of the terms node."""
    terms = n[terms_name]
    size = terms.shape[axis]
    partial = f"{name}.s"
    if partial in n.given:  # one addition: the recorded previous partial sum plus this term
        prev = np.moveaxis(n.given[partial], axis, 0)
        ts = np.moveaxis(terms, axis, 0)
        s = np.concatenate([ts[:1], prev[:-1] + ts[1:]])
        s = np.moveaxis(s, 0, axis)
    else:
        s = np.cumsum(terms, axis=axis)
    n.put(partial, s, np.cumsum(np.abs(terms), axis=axis), depth=2 if n.local else size + 2)
    n.put(name, terms.sum(axis=axis), np.abs(terms).sum(axis=axis), depth=size + 2)


def dot(n: Nodes, name: str, products: np.ndarray, axis: int, part: str = "p") -> None:
    """A contraction: its products (``name.p`` or ``name.t``), running sums and totals."""
    n.put(f"{name}.{part}", products)
    _running(n, name, f"{name}.{part}", axis)


def row_sum(n: Nodes, name: str, terms: str) -> None:
    """``name[..., i] = Σ_j terms[..., i, j]`` with its running sums."""
    _running(n, name, terms, -1)


def stable(n: Nodes, scores: str, prefix: str, out: str) -> None:
    """max, shift, exp, sum, quotient and the check that the weights sum to one."""
    s = n[scores]
    n.put(f"{prefix}.max", s.max(axis=-1), depth=0)
    with np.errstate(invalid="ignore"):
        n.put(f"{prefix}.shift", s - n[f"{prefix}.max"][..., None])
        shift = n[f"{prefix}.shift"]
        e = np.exp(shift)
    # exp turns the absolute error of its argument into a relative one
    n.put(f"{prefix}.exp", e, np.abs(e) * (1 + np.nan_to_num(np.abs(shift), posinf=0)), depth=3)
    row_sum(n, f"{prefix}.sum", f"{prefix}.exp")
    n.put(out, n[f"{prefix}.exp"] / n[f"{prefix}.sum"][..., None])
    row_sum(n, f"{out}_sum", out)


def softmax(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Softmax over the last axis and a magnitude for a library softmax computed in one call."""
    shift = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shift)
    out = e / e.sum(axis=-1, keepdims=True)
    spread = np.nan_to_num(np.abs(shift), posinf=0)
    return out, out * (2 + spread + spread.max(axis=-1, keepdims=True))


def matmul(n: Nodes, name: str, a: np.ndarray, b: np.ndarray) -> None:
    """A library matrix product, allowed one rounding per term."""
    n.put(name, a @ b, np.abs(a) @ np.abs(b), depth=a.shape[-1] + 2)


def check(n: Nodes, name: str, a: str, b: str) -> None:
    """``max |a - b|``: exact differences of the recorded values, or the chain's forms' bound."""
    with np.errstate(invalid="ignore"):
        value = np.asarray(np.abs(n[a] - n[b]).max()) if n[a].size else np.asarray(0.0)
    mag = value if n.local else np.asarray(max(n.mag[a].max(initial=0), n.mag[b].max(initial=0)))
    n.put(name, value, mag, depth=2 if n.local else 64)


def project(n: Nodes, name: str, x: np.ndarray, w: np.ndarray) -> None:
    """``name[..., i, c] = Σ_k x[..., i, k] w[..., k, c]``, products laid out (…, i, c, k)."""
    dot(n, name, x[..., :, None, :] * np.swapaxes(w, -1, -2)[..., None, :, :], axis=-1)


def attend(n: Nodes, pre: str, q: str, k: str, v: str, root: str) -> None:
    """Scores, -inf above the diagonal, scaling, stable softmax and context vectors (names under ``pre``)."""
    dot(n, f"{pre}omega", n[q][..., :, None, :] * n[k][..., None, :, :], axis=-1)
    t = n[q].shape[-2]
    upper = np.triu(np.ones((t, t)), k=1) != 0
    n.put(f"{pre}neg.omega", np.where(upper, -np.inf, n[f"{pre}omega"]), depth=0)
    n.put(f"{pre}neg.scaled", n[f"{pre}neg.omega"] / n[root])
    stable(n, f"{pre}neg.scaled", f"{pre}causal", f"{pre}causal.alpha")
    context(n, f"{pre}z", f"{pre}causal.alpha", v)


def context(n: Nodes, name: str, alpha: str, v: str) -> None:
    """``z[..., i, c] = Σ_j alpha[..., i, j] v[..., j, c]``, terms laid out (…, i, j, c)."""
    dot(n, name, n[alpha][..., :, :, None] * n[v][..., None, :, :], axis=-2, part="t")


def simple(given: Mapping[str, np.ndarray], local: bool = False) -> Nodes:
    """Every node of lesson simple from ``x`` (chain) or from every recorded node (local)."""
    n = Nodes(given, local)
    x = n["x"]
    dot(n, "omega", x[:, None, :] * x[None, :, :], axis=-1)
    omega = n["omega"]
    row_sum(n, "div.sum", "omega")
    n.put("div.alpha", omega / n["div.sum"][:, None])
    row_sum(n, "div.alpha_sum", "div.alpha")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(omega)
        n.put("naive.exp", e, e * (1 + np.abs(omega)), depth=3)
        row_sum(n, "naive.sum", "naive.exp")
        n.put("naive.alpha", n["naive.exp"] / n["naive.sum"][:, None])
        row_sum(n, "naive.alpha_sum", "naive.alpha")
    stable(n, "omega", "stable", "alpha")
    value, mag = softmax(omega)
    n.put("torch.alpha", value, mag, depth=omega.shape[1] + 4)
    row_sum(n, "torch.alpha_sum", "torch.alpha")
    check(n, "check.naive", "naive.alpha", "alpha")
    check(n, "check.torch", "torch.alpha", "alpha")
    context(n, "z", "alpha", "x")
    matmul(n, "mat.omega", x, x.T)
    value, mag = softmax(n["mat.omega"])
    n.put("mat.alpha", value, mag, depth=x.shape[0] + 4)
    matmul(n, "mat.z", n["mat.alpha"], x)
    for stem in ("omega", "alpha", "z"):
        check(n, f"check.{stem}", f"mat.{stem}", stem)
    return n


def _scaled_core(n: Nodes, pre: str = "") -> None:
    """Projections, scores, the division by sqrt(d_k) and the stable softmax (lessons trainable, causal)."""
    x = n[f"{pre}x"]
    for name, w in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
        project(n, f"{pre}{name}", x, n[f"{pre}{w}"])
    dot(n, "omega", n["q"][:, None, :] * n["k"][None, :, :], axis=-1)
    n.put("scaled", n["omega"] / n["sqrt_dk"])
    stable(n, "scaled", "stable", "alpha")


def trainable(given: Mapping[str, np.ndarray], local: bool = False) -> Nodes:
    """Every node of lesson trainable from ``x``, the weights and ``sqrt_dk`` (chain) or from all (local)."""
    n = Nodes(given, local)
    _scaled_core(n)
    value, mag = softmax(n["scaled"])
    n.put("torch.alpha", value, mag, depth=n["scaled"].shape[1] + 4)
    check(n, "check.torch", "torch.alpha", "alpha")
    context(n, "z", "alpha", "v")
    for name, w in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
        matmul(n, f"mat.{name}", n["x"], n[w])
    matmul(n, "mat.omega", n["mat.q"], n["mat.k"].T)
    value, mag = softmax(n["mat.omega"] / n["sqrt_dk"])
    n.put("mat.alpha", value, mag, depth=n["x"].shape[0] + 4)
    matmul(n, "mat.z", n["mat.alpha"], n["mat.v"])
    for stem in ("q", "k", "v", "omega", "alpha", "z"):
        check(n, f"check.{stem}", f"mat.{stem}", stem)
    return n


def causal(given: Mapping[str, np.ndarray], local: bool = False) -> Nodes:
    """Every node of lesson causal from its leaves (chain) or from every recorded node (local)."""
    n = Nodes(given, local)
    _scaled_core(n)
    tril = n["mask.tril"]
    n.put("masked.w", n["alpha"] * tril)
    row_sum(n, "masked.sum", "masked.w")
    n.put("masked.alpha", n["masked.w"] / n["masked.sum"][:, None])
    t = tril.shape[0]
    upper = np.triu(np.ones((t, t)), k=1) != 0
    n.put("neg.omega", np.where(upper, -np.inf, n["omega"]), depth=0)
    n.put("neg.scaled", n["neg.omega"] / n["sqrt_dk"])
    stable(n, "neg.scaled", "causal", "causal.alpha")
    check(n, "check.mask", "masked.alpha", "causal.alpha")
    n.put("dropout.kept", n["causal.alpha"] * n["dropout.keep"])
    n.put("dropout.alpha", n["dropout.kept"] * n["dropout.scale"])
    bx = n["batch.x"]
    for name, w in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
        project(n, f"batch.{name}", bx, n[f"batch.{w}"])
    attend(n, "batch.", "batch.q", "batch.k", "batch.v", "batch.sqrt_dk")
    module_output(n, "batch.mat.z", bx, n["batch.W_query"], n["batch.W_key"], n["batch.W_value"])
    check(n, "check.batch.z", "batch.mat.z", "batch.z")
    return n


def module_output(n: Nodes, name: str, x: np.ndarray, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray) -> None:
    """The compact causal module in matrix form, from its inputs in one go."""
    q, k, v = x @ wq, x @ wk, x @ wv
    t = x.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-1])
    scores = np.where(np.triu(np.ones((t, t)), k=1) != 0, -np.inf, scores)
    weights, _ = softmax(scores)
    spread = 1 + np.abs(scores[np.isfinite(scores)]).max() + np.abs(x).sum(axis=-1).max()
    n.put(name, weights @ v, (np.abs(weights) @ np.abs(v)) * spread, depth=8 * (t + x.shape[-1]))


def multihead(given: Mapping[str, np.ndarray], local: bool = False) -> Nodes:
    """Every node of lesson multihead from its leaves (chain) or from every recorded node (local)."""
    n = Nodes(given, local)
    x = n["x"]  # (b, i, k)
    for name, w in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
        wh = n[f"wrap.{w}"]  # (h, k, c)
        n_ = x[None, :, :, None, :] * np.swapaxes(wh, -1, -2)[:, None, None, :, :]  # (h, b, i, c, k)
        dot(n, f"wrap.{name}", n_, axis=-1)
    attend(n, "wrap.", "wrap.q", "wrap.k", "wrap.v", "wrap.sqrt_dk")
    z = n["wrap.z"]  # (h, b, i, c): heads side by side along the last axis
    n.put("wrap.concat", np.concatenate(list(z), axis=-1), depth=0)
    for name, w in (("q", "W_query"), ("k", "W_key"), ("v", "W_value")):
        project(n, f"split.{name}", x, n[f"split.{w}"])
        full = n[f"split.{name}"]  # (b, i, c) -> (h, b, i, c/h)
        b, t, width = full.shape
        heads = n["wrap.W_query"].shape[0]
        n.put(f"split.h{name}", np.stack(np.split(full, heads, axis=-1)), depth=0)
        assert n[f"split.h{name}"].shape == (heads, b, t, width // heads)
    attend(n, "split.", "split.hq", "split.hk", "split.hv", "split.sqrt_dk")
    n.put("split.concat", np.concatenate(list(n["split.z"]), axis=-1), depth=0)
    project(n, "split.proj", n["split.concat"], n["split.W_out"])
    n.put("split.out", n["split.proj"] + n["split.b_out"])
    return n


LESSONS = {"simple": simple, "trainable": trainable, "causal": causal, "multihead": multihead}
