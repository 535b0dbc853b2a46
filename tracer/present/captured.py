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

import re

import numpy as np

from tracer.core.trace import Node, Trace
from tracer.present.attention_parts import LAYOUT, attentions, role
from tracer.present.idwords import paths_of, steps_of, upper, words
from tracer.present.narrative import Narrative
from tracer.present.strings import Strings
from tracer.present.views.nodes import upright

PARTS = {"p", "s", "t", "max", "shift", "exp", "sum", "quot", "keep", "kept", "scale", "xw", "n", "keepdim", "c"}
PARTS |= {"scores", "scaled", "causal", "masked", "masked_by", "hide", "biased", "weights"}
PARTS |= {"mean", "dev", "sq", "ss", "count", "var", "eps", "veps", "std", "norm", "shifted", "cube", "cubec", "inner"}
PARTS |= {"u", "tanh", "erf", "onep", "half", "prod", "three", "k", "root", "r2", "one", "h", "flat", "put"}
PARTS |= {"left", "right", "drop", "dropped", "dscale", "safe", "blind"}
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
ARITH = {"add", "sub", "mul", "div", "exp", "sqrt", "rsqrt", "pow", "neg", "abs", "tanh", "log", "square"}
ARITH |= {"reciprocal", "sigmoid", "relu", "maximum", "minimum", "erf", "var", "layer_norm", "gelu"}
MAX_TABLES = 6
"""A stage shows at most this many of its results as tables (every value stays in the trace)."""


def is_part(trace: Trace, node: Node) -> bool:
    """Whether ``node`` is a piece of another node's step-by-step form (``scores.p``, ``weights.max``)."""
    head, _, last = node.name.rpartition(".")
    if node.name.startswith("check.") or node.op == "const":
        return True
    if not head or last not in PARTS:
        return False
    whole = head.rpartition(".")[0]  # SDPA's ``N.weights.max``: a part of ``N``, which has no ``N.weights``
    return trace.get(head) is not None or (head.endswith(".weights") and bool(whole) and trace.get(whole) is not None)


def kind(node: Node) -> str:
    """The paragraph a node is told in."""
    if node.attrs.get("library") == "dropout":
        return "dropout"
    if node.attrs.get("library") == "linear":  # with a bias its last step is an ``add``: still sums of products
        return "sum"
    if node.op in ("sum", "softmax", "masked_fill", "opaque", "write"):
        return node.op
    if node.op in LAYOUT:
        return "layout"
    if node.op in ("max", "amax") or node.attrs.get("library") == "mean":
        return "reduce"
    return "arith" if node.op in ARITH else "other"


def captions(trace: Trace, s: Strings) -> dict[str, dict[str, str]]:
    """A caption for every table and heatmap of the page: each attention's parts by their role, else by kind.

    Every caption names its tensor in words (:func:`~tracer.present.idwords.words`:
    the code's variable as code, the ops that followed said in the page's
    language), and every one that may be drawn has a figure caption and an
    alt text of its own.
    """
    out: dict[str, dict[str, str]] = {}
    paths, steps = paths_of(trace), steps_of(trace)
    for n in trace.nodes:
        said = words(n.name, s, modules=paths, steps=steps)
        plain = {"alt": s("capture.alt_node", name=words(n.name, s, code=False, modules=paths, steps=steps))}
        if n.op == "input":  # what the code started from: given to it, built by it, or a module's weight or buffer
            if _constant(n):
                fn, shape = _made(n)
                out[n.name] = {"caption": s("capture.cap_const", name=said, fn=f"`{fn}`", shape=shape), **plain}
            else:
                key = "capture.cap_input" if _given(n) else "capture.cap_param"
                out[n.name] = {"caption": s(key, name=said), **plain}
        elif not is_part(trace, n):
            text = upper(s(f"capture.cap_{kind(n)}", name=said))
            out[n.name] = {"caption": text, **_formula(n), "figure": s("capture.fig", what=text), **plain}
    for attention in attentions(trace):
        for n in attention:
            what = role(trace, attention, n)
            name = words(n.name, s, modules=paths, steps=steps)
            text = upper(_mask_caption(n, name, s) if what == "mask" else s(f"capture.cap_{what}", name=name))
            if what == "weights" and (seen := _blind(n)):
                key = "capture.cap_blind" if len(seen) == 1 else "capture.cap_blind_many"
                text = s(key, weights=text, rows=_join(s, seen))
            out[n.name] = {**_formula(n), "caption": text, "figure": s("capture.fig", what=text)}
            biased = what == "mask" and _mask_key(n) == "capture.cap_mask_bias"
            out[n.name]["alt"] = s("capture.alt_bias" if biased else f"capture.alt_{what}")
    return out


def _blind(node: Node) -> list[str]:
    """The queries (1-based, along ``i``) whose weights are 0 for every key: a mask hid every key from them."""
    v = np.asarray(node.value, dtype=np.float64)
    if "i" not in node.axes or v.ndim < 2 or not v.size:
        return []
    rows = np.all(v == 0, axis=-1)  # per query, in every batch and head: moved to the front, then any
    rows = np.moveaxis(rows, node.axes.index("i"), 0).reshape(v.shape[node.axes.index("i")], -1).any(axis=1)
    return [str(q + 1) for q in np.flatnonzero(rows)]


def _mask_caption(node: Node, name: str, s: Strings) -> str:
    """What a mask step put where a query may not look: −inf, a very negative number, or a bias of any sign.

    Code writes ``-inf`` (the book, nanoGPT), ``torch.finfo(dtype).min``
    (Hugging Face) or adds a bias that is no mask at all (ALiBi, T5's
    relative positions): the caption says which, from the values.
    """
    key = _mask_key(node)
    if key == "capture.cap_mask_fill":
        low = float(np.asarray(node.value, dtype=np.float64).min())
        return str(s(key, name=name, fill=f"{low:.4e}".replace("-", "−")))
    return str(s(key, name=name))


def _mask_key(node: Node) -> str:
    """Which mask sentence fits a mask step's values: −inf, a fill below −1e30, or else a bias."""
    v = np.asarray(node.value, dtype=np.float64)
    if np.isneginf(v).any():
        return "capture.cap_mask"
    if v.size and float(v.min()) <= -1e30:  # a fill no score can reach: weight 0 after the softmax, as −inf gives
        return "capture.cap_mask_fill"
    return "capture.cap_mask_bias"


CONSTANTS = ("ones", "zeros", "full", "arange", "eye", "tensor", "as_tensor", "linspace", "empty", "tril", "triu")
"""Factories whose values the code fixes itself (no draw, nothing given): ``torch.ones(T, T)`` and its ``_like``."""


def _constant(node: Node) -> bool:
    """A tensor the code built from constants (``torch.ones(T, T)``, ``torch.tensor([…])``), not one given to it."""
    fn, _ = _made(node)
    base = fn.removeprefix("torch.").removesuffix("_like")
    return node.op == "input" and _given(node) and fn.startswith("torch.") and base in CONSTANTS


def _made(node: Node) -> tuple[str, str]:
    """``made_by`` ``torch.ones(16, 16)`` as the factory and the shape it made: (``torch.ones``, ``16 × 16``)."""
    made = str(node.attrs.get("made_by", ""))
    fn = made.partition("(")[0]
    return fn, " × ".join(str(n) for n in node.value.shape) or "0-d"


def stage_story(trace: Trace, stage: str, s: Strings) -> dict[str, object]:
    """The narrative table of one stage."""
    own = [n for n in trace.nodes if n.stage == stage]
    if stage == "inputs":
        leaves = [n.name for n in own if n.op == "input"]
        consts = [n for n in leaves if _constant(trace.node(n))]
        given = [n for n in leaves if _given(trace.node(n)) and n not in consts]
        params = [n for n in leaves if n not in given and n not in consts]
        key = "capture.inputs" if given and params else "capture.inputs_only" if given else "capture.inputs_params"
        text = s(key, inputs=_listed(s, given), params=_listed(s, params))
        if consts:
            made = [
                s("capture.const", name=f"`{n}`", fn=f"`{fn}`", shape=shape)
                for n in consts
                for fn, shape in [_made(trace.node(n))]
            ]
            text += " " + s("capture.inputs_consts", consts=s("capture.comma").join(made))
        return {"title": s("capture.inputs_title"), "text": text, "show": leaves[:MAX_TABLES]}
    main = [n for n in own if not is_part(trace, n)]
    paths, steps = paths_of(trace), steps_of(trace)
    said = {n.name: words(n.name, s, modules=paths, steps=steps) for n in main}
    paras = [
        upper(s(f"capture.{key}", names=_join(s, [said[n.name] for n in main if kind(n) == k])))
        for k, key in KINDS
        if any(kind(n) == k for n in main)
    ]
    every = attentions(trace)
    found = [a for a in every if any(n.stage == stage and role(trace, a, n) == "weights" for n in a)]
    if stage == "build":
        paras.insert(0, s("capture.build"))
        title = s("capture.build_title")
    elif stage == "output" and not found:  # an attention in the ``return`` is titled as one
        title = s("capture.output_title")
    elif stage == "main":
        title = s("capture.main_title")
    else:
        title = _title(trace, stage, main, s, found)
    checks = [n.name for n in own if n.name.startswith("check.")]
    attn = [n for a in every for n in a if n.stage == stage]
    rest = sorted((n for n in main if n.op != "opaque" and n not in attn), key=lambda n: n.op != "write")
    shown = list({n.name: n for n in [*attn, *rest[: max(0, MAX_TABLES - len(attn))]]}.values())
    order = {n.name: k for k, n in enumerate(trace.nodes)}
    shown.sort(key=lambda n: order[n.name])
    summed = [n.name for n in shown if n.op == "sum" and _products(trace, n) and "i" in n.axes]
    notes = {"order": s("capture.note_order")} if any(kind(n) == "sum" for n in main) else {}
    table: dict[str, object] = {
        "title": title,
        "text": "\n\n".join(paras) or title,
        "notes": notes,  # op_sum cites it: how a library's order of addition depends on the machine
        "show": [n.name for n in shown] + checks,
        "write": summed[: max(2, len([n for n in attn if n.op == "sum"]))],
        "heatmap": _heatmaps(shown, attn),
        "bars": [n.name for a in every for n in a if n.stage == stage and n in shown and _barred(trace, a, n)],
    }
    return table


def _where(trace: Trace, stage: str, s: Strings) -> str:
    """What a section is: a module's ``forward`` (``CausalSelfAttention.forward``, its path) or a statement."""
    modules = trace.meta.get("modules") or {}
    pairs = modules.items() if isinstance(modules, dict) else ()
    paths = {str(p).replace(".", "_"): (str(p), str(c)) for p, c in pairs}
    if stage in paths:
        path, cls = paths[stage]
        return s("capture.where_module", cls=cls, path=path)
    own = [n.name for n in trace.nodes if n.stage == stage]
    root = paths.get("(root)")
    if stage == "output":  # ``return torch.softmax(scores, -1) @ v``: the attention in the return statement
        return s("capture.where_return", fn=f"{root[1]}.forward" if root else trace.meta.get("lesson", ""))
    if any(n.endswith((".in_proj", ".in_proj_q")) for n in own):  # nn.MultiheadAttention, opened up
        path = next(n for n in own if n.endswith((".in_proj", ".in_proj_q"))).rpartition(".")[0]
        return s("capture.where_module", cls="nn.MultiheadAttention", path=path)
    if stage == trace.meta.get("lesson"):  # the captured function's ``return``
        return s("capture.where_return", fn=stage)
    fn, caller = _function(trace, stage)
    if fn and fn not in ("forward", "__init__"):  # a helper's statement, or the captured function's own
        cls = root[1] if root is not None else ""
        if not caller:
            return s("capture.where_fn", fn=fn, name=_targets(trace, stage))
        by = f"{cls}.forward" if caller == "forward" and cls else f"{caller}()"
        return s("capture.where_helper", fn=fn, caller=by, name=_targets(trace, stage))
    if root is not None and not root[1].startswith(("MultiheadAttention", "Linear")):
        return s("capture.where_in", name=_targets(trace, stage), cls=root[1])
    return s("capture.where_statement", name=_targets(trace, stage))


def _function(trace: Trace, stage: str) -> tuple[str, str]:
    """The function whose statement made ``stage`` and the user function that called it (``""`` where unknown).

    A comprehension's statement is its enclosing function's.  Read from
    ``meta["functions"]``, checked: a trace file is untrusted.
    """
    table = trace.meta.get("functions")
    got = table.get(stage) if isinstance(table, dict) else None
    if not isinstance(got, list) or len(got) != 2 or not all(isinstance(x, str) for x in got):
        return "", ""
    fn, caller = got
    if fn.startswith("<") and caller:  # ``[lin(x) for lin, x in …]`` inside ``forward``
        fn, caller = caller, ""
    ok = all(x.isidentifier() for x in (fn, caller) if x)
    return (fn, caller) if ok else ("", "")


def _targets(trace: Trace, stage: str) -> str:
    """The names a statement's section was called after: ``q, k, v`` for the section ``q_k_v`` (if those exist)."""
    last = {n.name.rpartition(".")[2] for n in trace.nodes if n.stage == stage}
    names = last | {re.sub(r"_[0-9]+$", "", n) for n in last}  # ``query_2``: the value ``query`` holds next
    parts = stage.split("_")
    return ", ".join(parts) if len(parts) > 1 and all(p in names for p in parts) else stage


def _title(trace: Trace, stage: str, main: list[Node], s: Strings, found: list[list[Node]]) -> str:
    """A sentence saying what the section shows: where, and what it computes (per head, for an attention).

    ``found`` are the attentions whose weights this stage computes.
    """
    where = _where(trace, stage, s)
    if found:
        roles = [r for r in ROLES if any(n.stage == stage and role(trace, a, n) == r for a in found for n in a)]
        parts = _join(s, [s(f"capture.part_{r}") for r in roles])
        heads = max(_heads(trace, a) for a in found)
        key = "capture.attention_title" if heads > 1 else "capture.attention_title_one"
        return s(key, where=where, parts=parts, heads=heads)
    kinds = [k for k, _ in KINDS if any(kind(n) == k for n in main)]
    if not kinds:
        return s("capture.stage_title_empty", where=where)
    return s("capture.stage_title", where=where, parts=_join(s, [s(f"capture.kind_{k}") for k in kinds]))


def _listed(s: Strings, names: list[str]) -> str:
    """Names of the code as code, in a list: ```x```, ```c_attn.weight```."""
    return s("capture.comma").join(f"`{n}`" for n in names)


def _join(s: Strings, items: list[str]) -> str:
    """``a, b and c`` (``a、b和c``; ``乘积之和以及c`` where the list's words end in 和)."""
    if len(items) < 2:
        return "".join(items)
    first = s("capture.comma").join(items[:-1])
    key = "capture.and_after" if first.endswith("和") else "capture.and"  # not 乘积之和和…
    return s(key, first=first, last=items[-1])


ROLES = ("scores", "scaled", "mask", "weights", "context", "out")
"""The parts of an attention, in the order a title lists them."""


def _formula(node: Node) -> dict[str, str]:
    """A sum's recorded formula with its left side indexed, so a written-out entry says which one it is."""
    lhs, eq, rhs = node.latex.partition(" = ")
    if node.op != "sum" or not eq or not node.axes or "<" in lhs:
        return {}
    return {"formula": f"{lhs}_{{<{','.join(node.axes)}>}} = {rhs}"}


def _heads(trace: Trace, attention: list[Node]) -> int:
    """How many heads an attention has: the ``h`` axis of its weights per batch and head (else one)."""
    ws = [n for n in attention if role(trace, attention, n) == "weights"]
    best = next((n for n in ws if n.axes[:2] == ("b", "h")), ws[0])
    return int(best.value.shape[best.axes.index("h")]) if "h" in best.axes else 1


def _given(node: Node) -> bool:
    """An input of the code: not a module's weight or buffer, not a mask a dropout drew."""
    made = str(node.attrs.get("made_by", ""))
    if "param" in node.attrs:  # captured by this version: it says so
        return not node.attrs["param"] and "draw" not in made
    return "." not in node.name and not made  # an older file: a path or an initialiser says weight


def _products(trace: Trace, node: Node) -> bool:
    """Whether a sum has its products recorded (``N.p``, or ``N.t`` for SDPA's weights times values)."""
    return trace.get(f"{node.name}.p") is not None or trace.get(f"{node.name}.t") is not None


def _heatmaps(shown: list[Node], attn: list[Node]) -> list[str]:
    """The (…, i, j) matrices drawn: every part of an attention, then one more (a mask's own matrix), in order."""
    mine = [n.name for n in shown if _square(n) and n in attn]
    other = [n.name for n in shown if _square(n) and n not in attn]
    keep = set(mine + other[: max(1, 2 - len(mine))])
    return [n.name for n in shown if n.name in keep]


def _barred(trace: Trace, attention: list[Node], node: Node) -> bool:
    """Drawn as bars: one query's weights over the keys, or a context a loop summed (no products node)."""
    what = role(trace, attention, node)
    if what == "weights":
        return node.axes == ("j",)
    return what == "context" and node.op in ("add", "write") and not _products(trace, node)


def _square(node: Node) -> bool:
    """A (…, i, j) matrix whose other axes are batches and heads, in any order: drawn as heatmaps (upright)."""
    node = upright(node)
    lead = set(node.axes[:-2])
    return node.axes[-2:] == ("i", "j") and lead <= {"b", "h", "n"} and len(set(node.axes)) == len(node.axes)


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
        "nodes": captions(trace, s),
    }
    return from_dict(data, str(trace.meta.get("lesson", "capture")), lang)
