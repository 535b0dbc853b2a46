"""Notebook cells of the backward pass: torch.autograd's gradients printed beside the traced ones.

A lesson traced with its backward pass gets, in its notebook (and in its
page's backward sections), the forward computation once more in plain torch,
from the traced leaves (inputs and weights, ``requires_grad=True``), each
tensor kept in a dict under the name of the traced node it recomputes
(``t["alpha"]`` is node ``alpha``).  ``backward`` is called with the traced
upstream gradient, and each backward stage's cell prints every gradient
autograd kept beside the traced node of the same name with a ``d`` in
front: ``show("dalpha", t["alpha"].grad)``.  The lesson writes only its
forward (:func:`cells`'s ``forward``); which gradient is shown where comes
from the trace.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracer.core.trace import Trace
from tracer.present.notebook.code import Cell, check, lines


def leaf(name: str) -> str:
    """The torch expression of a traced leaf that autograd differentiates."""
    return f'torch.tensor(TRACED["{name}"], dtype=dtype, requires_grad=True)'


def constant(name: str, op: str = "") -> str:
    """The torch expression of a traced constant (a mask, dropout's kept entries), ``op`` applied to it."""
    return f'torch.tensor(TRACED["{name}"], dtype=dtype){op}'


def cells(trace: Trace, leaves: Sequence[str], forward: Sequence[tuple[str, str]]) -> dict[str, list[Cell]]:
    """Backward stage -> its cells: the first runs ``forward`` and autograd, each shows its stage's gradients.

    ``leaves`` are the traced nodes autograd differentiates; ``forward`` is
    ``(node, expression)`` in order, each expression reading earlier
    tensors as ``t["<node>"]``, the last one the output the backward pass
    starts from; the further outputs ``meta["backward"]["also"]`` names (a
    second module on the same inputs) are computed among the others, and
    autograd starts from every output at once.  Nothing for a trace without
    a backward pass.
    """
    back = trace.meta.get("backward")
    if not isinstance(back, dict):
        return {}
    order = [str(s) for s in back.get("stages", [])]
    names = {*leaves, *(n for n, _ in forward)}
    shown: dict[str, list[str]] = {}
    for node in trace.nodes:  # in the order the backward pass recorded them
        kept = node.name[1:]
        if node.name.startswith("d") and kept in names and node.stage in order:
            shown.setdefault(node.stage, []).append(check(trace, node.name, f't["{kept}"].grad'))
    upstream = str(back["upstream"])
    trace[upstream]  # an unknown node fails where the notebook is built, not where it runs
    also = [(str(a["output"]), str(a["upstream"])) for a in back.get("also", [])]
    for name, grad in also:
        trace[name], trace[grad]
    run = lines(
        "# The forward again, from the traced leaves, each tensor under the name of the node it recomputes;",
        "# then autograd, from the traced upstream gradient.",
        "t = {}",
        *(f't["{n}"] = {leaf(n)}' for n in leaves),
        *(f't["{n}"] = {expr}' for n, expr in forward),
        "for tensor in t.values():",
        "    tensor.retain_grad()  # keep the gradient of every tensor, not only of the leaves",
        _backward_call([(forward[-1][0], upstream), *also]),
    )
    first = next((s for s in order if s in trace.stages), None)
    out: dict[str, list[Cell]] = {}
    for stage in order:
        code = lines(*shown[stage]) if shown.get(stage) else ""
        if stage == first:
            out[stage] = [run + code] if code else [run]
        elif code:
            out[stage] = [code]
    return out


def _backward_call(outputs: Sequence[tuple[str, str]]) -> str:
    """The line that runs autograd from each output's traced upstream gradient (one term of L per output)."""
    grad = 'torch.tensor(TRACED["{}"], dtype=dtype)'
    if len(outputs) == 1:
        out, up = outputs[0]
        return f't["{out}"].backward({grad.format(up)})'
    outs = ", ".join(f't["{out}"]' for out, _ in outputs)
    ups = ", ".join(grad.format(up) for _, up in outputs)
    return f"torch.autograd.backward([{outs}], [{ups}])  # L has one term per output"


def projected() -> list[tuple[str, str]]:
    """The projections and scores of the lessons with weights: q, k, v from x, then omega = q kᵀ."""
    return [
        ("q", 't["x"] @ t["W_query"]'),
        ("k", 't["x"] @ t["W_key"]'),
        ("v", 't["x"] @ t["W_value"]'),
        ("omega", 't["q"] @ t["k"].T'),
    ]


def masked(hide: str, weights: str, pre: str = "", key: str = "k") -> list[tuple[str, str]]:
    """Scores ``<pre>omega`` hidden where traced mask ``hide`` is 1 (−∞), divided by √d (``key``'s width), then
    the softmax into ``weights``."""
    return [
        (f"{pre}neg.omega", f't["{pre}omega"].masked_fill(' + constant(hide, " != 0") + ", -torch.inf)"),
        (f"{pre}neg.scaled", f't["{pre}neg.omega"] / t["{key}"].shape[-1] ** 0.5'),
        (weights, f'torch.softmax(t["{pre}neg.scaled"], dim=-1)'),
    ]


def heads(name: str, full: str, count: int) -> tuple[str, str]:
    """Node ``name``: the last axis of ``full`` (b, i, c) cut into ``count`` heads, viewed head first (h, b, i, c)."""
    return name, f't["{full}"].unflatten(-1, ({count}, -1)).permute(2, 0, 1, 3)'


def joined(name: str, z: str) -> tuple[str, str]:
    """Node ``name``: the heads of ``z`` (h, b, i, c) side by side again (b, i, h·c)."""
    return name, f't["{z}"].permute(1, 2, 0, 3).flatten(-2)'


PROJECTED_LEAVES = ("x", "W_query", "W_key", "W_value")
"""The leaves of the lessons with weights: the inputs and the three projections' weights."""
