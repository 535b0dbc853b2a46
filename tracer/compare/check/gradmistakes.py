"""The mistakes of a hand-written attention backward, each a hypothesis of the check's one loop.

Every entry describes one slip as a :class:`Slip` (what the chain rule does
differently), and :func:`chain` computes the whole backward under it in
float64 from the lesson's own Q, K, V, dO, weights and dropout mask: dP, the
dropout's scale and mask, the softmax's row sum and dS, the scale, the mask,
dQ, dK and dV.  ``Slip()`` is the lesson's own backward (a test holds it to
the traced nodes).  A mistake is borne out when the student's returned dQ,
dK and dV equal its chain's in every run (:func:`borne_out`); its first wrong
step is the first node of the lesson's backward whose value it changes
(:func:`first_wrong`).  The entries are :class:`~.entry.Entry` objects,
tried by :func:`.catalogue.diagnose` like every other mistake, and said by
the message tables' ``diagnosis.<code>``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tracer.compare.check import align, gradref
from tracer.compare.check.context import Context, Hit
from tracer.compare.check.entry import Entry
from tracer.compare.check.model import Seen

ROLES = ("dp", "kept", "dropped", "rowsum", "ds", "unscaled", "scores", "dq", "dk", "dv")
"""The gradients of the chain, named as :class:`~.lessons.Gradients` names their nodes."""
STAGE = {
    "dp": "dweights",
    "kept": "dweights",
    "dropped": "dweights",
    "rowsum": "dsoftmax",
    "ds": "dsoftmax",
    "unscaled": "dscaling",
    "scores": "dscaling",
    "dq": "dqueries",
    "dk": "dkeys",
    "dv": "dvalues",
}
"""Each gradient's stage of the check, as the verdict names it."""
RESULTS = ("dq", "dk", "dv")


@dataclass(frozen=True)
class Slip:
    """How a backward differs from the lesson's (every default is the lesson's own backward)."""

    rowsum: str = "j"  # the softmax's row sum over the keys; "i" over the queries; "" left out
    softmax: bool = True  # False: dP used where dS belongs (the softmax's backward skipped)
    scale: int = 1  # how many times dS is divided by √d_k (0: never, 2: twice, as if by d_k)
    dv_t: bool = True  # dV = Pᵀ dO; False: P dO
    dk_t: bool = True  # dK = dSᵀ Q; False: dS Q
    hidden: str = "all"  # where P is the masked one: "all"; "dv" (dS from P unmasked); "" (P unmasked everywhere)
    zero_hidden: bool = True  # the masked scores' gradient set to 0 (matters only for what leaks there)
    keep: bool = True  # dropout's mask B applied to dP
    rescale: bool = True  # dropout's 1/(1−p) applied to dP
    dv_dropped: bool = True  # dV from the dropped-out weights (False: from the weights before dropout)


def chain(q: np.ndarray, k: np.ndarray, v: np.ndarray, do: np.ndarray, a: Arrays, slip: Slip) -> dict[str, np.ndarray]:
    """Every gradient of attention's backward under ``slip``, by role (:data:`ROLES`)."""
    root = a.root
    unmasked = _softmax(q @ k.T / root)
    p_ds = a.weights if slip.hidden == "all" else unmasked
    p_dv = a.weights if slip.hidden in ("all", "dv") else unmasked
    scale = 1.0 / (1.0 - a.rate)
    dropped_weights = p_dv * a.keep * scale if slip.dv_dropped else p_dv
    dv = (dropped_weights.T if slip.dv_t else dropped_weights) @ do
    dp = do @ v.T
    kept = dp * scale if slip.rescale else dp
    dropped = kept * a.keep if slip.keep else kept
    if slip.rowsum == "j":
        rowsum = (p_ds * dropped).sum(axis=1)
        shift = dropped - rowsum[:, None]
    elif slip.rowsum == "i":
        rowsum = (p_ds * dropped).sum(axis=0)
        shift = dropped - rowsum[None, :]
    else:
        rowsum = np.zeros(q.shape[0])
        shift = dropped
    ds = p_ds * shift if slip.softmax else dropped
    unscaled = ds / root**slip.scale
    scores = np.where(a.hidden, 0.0, unscaled) if slip.zero_hidden else unscaled
    dq = scores @ k
    dk = (scores.T if slip.dk_t else scores) @ q
    return {
        "dp": dp, "kept": kept, "dropped": dropped, "rowsum": rowsum, "ds": ds,
        "unscaled": unscaled, "scores": scores, "dq": dq, "dk": dk, "dv": dv,
    }  # fmt: skip


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


@dataclass(frozen=True)
class Arrays:
    """The lesson's values a backward reads besides Q, K, V and dO."""

    weights: np.ndarray  # P, masked
    hidden: np.ndarray  # True where a score is masked
    keep: np.ndarray  # B (all ones without dropout)
    rate: float  # p (0 without dropout)
    root: float  # √d_k


def inputs(c: Context, run: str) -> tuple[tuple[np.ndarray, ...], Arrays]:
    """Q, K, V, dO and the rest, read off the lesson's trace of ``run``."""
    g = c.spec.gradients
    assert g is not None
    trace = c.traces[run]
    q, k, v, do = gradref.operands(trace, g)
    t = q.shape[0]
    hidden = np.triu(np.ones((t, t), dtype=bool), 1) if c.spec.causal else np.zeros((t, t), dtype=bool)
    p = float(trace.meta.get("dropout", {}).get("p", 0.0)) if g.keep else 0.0
    keep = np.array(trace.tensor(g.keep), dtype=np.float64) if g.keep else np.ones((t, t))
    root = math.sqrt(q.shape[1])
    return (q, k, v, do), Arrays(np.array(trace.tensor(g.weights), dtype=np.float64), hidden, keep, p, root)


def predicted(c: Context, run: str, slip: Slip) -> dict[str, np.ndarray]:
    """The chain under ``slip`` on the lesson's values of ``run``."""
    (q, k, v, do), a = inputs(c, run)
    return chain(q, k, v, do, a, slip)


def borne_out(forms: tuple[Slip, ...], needs: Callable[[Context], bool] = lambda c: True) -> Callable[..., Hit | None]:
    """The test of a mistake made in any of ``forms``: the first whose dQ, dK, dV the student's equal in every run."""

    def test(c: Context) -> Hit | None:
        if not needs(c):
            return None
        for slip in forms:
            if _explains(c, slip, gradref.runs(c.spec)):
                changed = _changed(c, slip)
                made = _made(c, slip, changed)
                steps = tuple(dict.fromkeys(_node(c, r) for r in changed))
                return Hit(made, steps, where=made.where if made else "")
        return None

    return test


def _explains(c: Context, slip: Slip, runs: tuple[str, ...]) -> bool:
    """True when the student's dQ, dK and dV are ``slip``'s in every one of ``runs``."""
    for run in runs:
        got, want = gradref.values(c, run), predicted(c, run, slip)
        for r in RESULTS:
            mine = got[r]
            if mine is None or not align.close(mine, want[r]):
                return False
    return True


def _changed(c: Context, slip: Slip) -> list[str]:
    """The roles whose value ``slip`` changes, in the chain's order, on the lesson's own upstream gradient."""
    right, wrong = predicted(c, "eval", Slip()), predicted(c, "eval", slip)
    return [r for r in ROLES if _node(c, r) and not align.close(right[r], wrong[r])]


def _made(c: Context, slip: Slip, changed: list[str]) -> Seen | None:
    """The first tensor of the student's function (with its line) that holds a value ``slip`` changes.

    The changed gradients are looked for in the order the lesson computes
    them, on run ``eval``; an all-zero prediction (a row sum left out) is
    skipped, since any tensor of zeros would hold it.
    """
    if not c.seen:
        return None
    wrong, order = predicted(c, "eval", slip), {n.name: i for i, n in enumerate(c.traces["eval"].nodes)}
    for role in sorted(changed, key=lambda r: order[_node(c, r)]):
        if np.any(wrong[role]):
            m = align.find(wrong[role], c.traces["eval"].node(_node(c, role)).axes, c.seen)
            if m is not None:
                return m.seen
    return None


def _node(c: Context, role: str) -> str:
    g = c.spec.gradients
    assert g is not None
    return str(getattr(g, role, "") or "")


def first_wrong(c: Context, run: str, code: str) -> tuple[str, str, np.ndarray, np.ndarray]:
    """Mistake ``code``'s first wrong step in ``run``: its node, role, the lesson's value and the mistake's.

    The first node of the lesson's backward, in the trace's order, whose value the mistake changes.
    """
    entry = next(e for e in MISTAKES if e.code == code)
    slip = next(s for s in FORMS[entry.code] if _explains(c, s, (run,)))
    right, wrong = predicted(c, run, Slip()), predicted(c, run, slip)
    trace = c.traces[run]
    order = {n.name: i for i, n in enumerate(trace.nodes)}
    changed = [r for r in ROLES if _node(c, r) and not align.close(right[r], wrong[r])]
    role = min(changed, key=lambda r: order[_node(c, r)])
    return _node(c, role), role, np.array(trace.tensor(_node(c, role)), dtype=np.float64), wrong[role]


def _dropout(c: Context) -> bool:
    """True when the reference goes through the lesson's dropout (the student was given its mask)."""
    return bool(c.spec.gradients and c.spec.gradients.keep and c.traces["eval"].meta.get("dropout", {}).get("p"))


FORMS: dict[str, tuple[Slip, ...]] = {
    "grad_rowsum_missing": (Slip(rowsum=""),),
    "grad_rowsum_axis": (Slip(rowsum="i"),),
    "grad_dp_for_ds": (Slip(softmax=False), Slip(softmax=False, zero_hidden=False)),
    "grad_dv_untransposed": (Slip(dv_t=False),),
    "grad_dk_untransposed": (Slip(dk_t=False),),
    "grad_scale_missing": (Slip(scale=0),),
    "grad_scale_doubled": (Slip(scale=2),),
    "grad_mask_leak": (Slip(hidden="dv"), Slip(hidden=""), Slip(hidden="dv", zero_hidden=False)),
    "grad_dropout_mask": (Slip(keep=False), Slip(keep=False, dv_dropped=False)),
    "grad_dropout_scale": (Slip(rescale=False),),
}
"""Mistake code -> the forms it takes, in the order they are tried."""

_NEEDS: dict[str, Callable[[Context], bool]] = {
    "grad_mask_leak": lambda c: c.spec.causal,
    "grad_dropout_mask": _dropout,
    "grad_dropout_scale": _dropout,
}

MISTAKES: tuple[Entry, ...] = tuple(
    Entry(code, ("dvalues", "dqueries", "dkeys"), borne_out(forms, _NEEDS.get(code, lambda c: True)))
    for code, forms in FORMS.items()
)
"""In the order they are tried."""
