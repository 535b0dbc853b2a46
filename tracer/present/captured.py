"""The generic narrative of a captured trace: one section per stage, prose per kind of op.

A trace captured from ordinary torch code (``tracer.capture``, ``--torch``)
has no lesson narrative.  Unless it carries its own (a ``NARRATIVE`` in the
captured file), its report is told from its structure: a section per stage
(the inputs, one per module the root calls, or one per statement of the
code, named after the variable it assigns), each with a paragraph for each
kind of op it holds (products and sums, softmax, masks, dropout, layout,
writes through indexing …)
naming the steps, tables of the stage's own results, the focus query's
products worked out term by term, and heatmaps of (…, i, j) matrices.
"""

from __future__ import annotations

from tracer.core.trace import Node, Trace
from tracer.present.narrative import Narrative
from tracer.present.strings import Strings

PARTS = {"p", "s", "t", "max", "shift", "exp", "sum", "quot", "keep", "kept", "scale", "xw", "n", "keepdim", "c"}
PARTS |= {"scores", "scaled", "causal", "masked", "masked_by", "hide", "biased", "weights"}
PARTS |= {"mean", "dev", "sq", "ss", "count", "var", "eps", "veps", "std", "norm", "shifted", "cube", "cubec", "inner"}
PARTS |= {"u", "tanh", "erf", "onep", "half", "prod", "three", "k", "root", "r2", "one", "h", "flat", "put"}
PARTS |= {"left", "right", "drop", "dropped", "dscale"}
"""Last segments of the nodes that are parts of another node's step-by-step form."""

KINDS = (
    ("sum", "op_sum"),
    ("softmax", "op_softmax"),
    ("dropout", "op_dropout"),
    ("masked_fill", "op_mask"),
    ("arith", "op_arith"),
    ("reduce", "op_reduce"),
    ("layout", "op_layout"),
    ("write", "op_write"),
    ("other", "op_other"),
    ("opaque", "op_opaque"),
)
LAYOUT = {"view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "expand", "getitem", "cat", "stack"}
LAYOUT |= {"split", "chunk", "unbind", "flatten", "unflatten", "lookup", "permute"}
ARITH = {"add", "sub", "mul", "div", "exp", "sqrt", "rsqrt", "pow", "neg", "abs", "tanh", "log", "square"}
ARITH |= {"reciprocal", "sigmoid", "relu", "maximum", "minimum", "erf", "var", "layer_norm", "gelu"}
MAX_TABLES = 6
"""A stage shows at most this many of its results as tables (every value stays in the trace)."""


def is_part(trace: Trace, node: Node) -> bool:
    """Whether ``node`` is a piece of another node's step-by-step form (``scores.p``, ``weights.max``)."""
    head, _, last = node.name.rpartition(".")
    if node.name.startswith("check.") or node.op == "const":
        return True
    return bool(head) and last in PARTS and trace.get(head) is not None


def kind(node: Node) -> str:
    """The paragraph a node is told in."""
    if node.attrs.get("library") == "dropout":
        return "dropout"
    if node.op in ("sum", "softmax", "masked_fill", "opaque", "write"):
        return node.op
    if node.op in LAYOUT:
        return "layout"
    if node.op in ("max", "amax") or node.attrs.get("library") == "mean":
        return "reduce"
    return "arith" if node.op in ARITH else "other"


def stage_story(trace: Trace, stage: str, s: Strings) -> dict[str, object]:
    """The narrative table of one stage."""
    own = [n for n in trace.nodes if n.stage == stage]
    if stage == "inputs":
        leaves = [n.name for n in own if n.op == "input"]
        given = [n for n in leaves if "." not in n and not trace.node(n).attrs.get("made_by")]
        params = [n for n in leaves if n not in given]
        text = s("capture.inputs", inputs=", ".join(given) or "—", params=", ".join(params) or "—")
        return {"title": s("capture.inputs_title"), "text": text, "show": leaves[:MAX_TABLES]}
    main = [n for n in own if not is_part(trace, n)]
    paras = [
        s(f"capture.{key}", names=", ".join(n.name for n in main if kind(n) == k))
        for k, key in KINDS
        if any(kind(n) == k for n in main)
    ]
    if stage == "build":
        paras.insert(0, s("capture.build"))
        title = s("capture.build_title")
    elif stage == "output":
        title = s("capture.output_title")
    elif stage == "main":
        title = s("capture.main_title")
    else:
        title = s("capture.stage_title", name=stage)
    checks = [n.name for n in own if n.name.startswith("check.")]
    shown = sorted((n for n in main if n.op != "opaque"), key=lambda n: n.op != "write")[:MAX_TABLES]  # filled first
    table: dict[str, object] = {
        "title": title,
        "text": "\n\n".join(paras) or title,
        "show": [n.name for n in shown] + checks,
        "write": [n.name for n in shown if n.op == "sum" and trace.get(f"{n.name}.p") is not None and "i" in n.axes][
            :2
        ],
        "heatmap": [n.name for n in shown if _square(n)][:2],
    }
    return table


def _square(node: Node) -> bool:
    """A (…, i, j) matrix whose leading axes are batches and heads: drawn as heatmaps."""
    return node.axes[-2:] == ("i", "j") and set(node.axes[:-2]) <= {"b", "h"} and len(set(node.axes)) == len(node.axes)


def narrative(trace: Trace, lang: str) -> Narrative:
    """The generic narrative of a captured trace in ``lang``."""
    from tracer.present.narrative import from_dict
    from tracer.present.views.order import stage_order

    s = Strings(lang)
    modules = trace.meta.get("modules") or {}
    names = ", ".join(str(v) for v in dict.fromkeys(modules.values())) if isinstance(modules, dict) else ""
    data = {
        "title": s("capture.title"),
        "summary": s("capture.summary", modules=names or str(trace.meta.get("lesson", "torch"))),
        "stages": {st: stage_story(trace, st, s) for st in stage_order(trace)},
    }
    return from_dict(data, str(trace.meta.get("lesson", "capture")), lang)
