"""Check a parsed trace document, whole, before any of it is used.

A trace file with a valid digest can still be wrong in structure (the digest
is a plain SHA-256 anyone can recompute).  :func:`check` validates the
document against the JSON Schema (``trace-format.schema.json`` beside this
module, the one ``docs/trace-format.md`` describes), then against the rules
a schema cannot say:

- the metadata agree: as many tokens as ``n_tokens``, ``query`` among them,
  sizes within :mod:`tracer.core.limits`;
- each node's ``split`` fits its name and axes, its shape has one size per
  axis and stays within the limits (checked before anything is allocated);
- an input node over tokens (first axis ``i``) has one row per token;
- each argument names an earlier node (a running sum may name itself) and
  indexes it with one expression per axis of that node, each ``*``, an axis
  of the reading node, such an axis shifted back (``k-1``), or integer
  arithmetic over the reading node's axes (``(h-1)*2+d``,
  :func:`tracer.core.ids.index_expr`);
- ``attrs`` hold what the ops read: ``over`` an axis, ``partials`` an
  earlier node, ``fill`` a number;
- the values of all nodes, in their dtype, fit in
  :data:`~tracer.core.limits.MAX_TRACE_VALUE_BYTES`, counted from the
  declared shapes before anything is allocated (a derived node costs the
  file nothing), and there are at most :data:`~tracer.core.limits.MAX_NODES`;
- a backward pass (``meta.backward``) names what the file holds: its
  ``output`` and each of its ``gradients`` are nodes, its ``upstream`` is an
  input node with the output's axes and shape, and each of its ``stages``
  is the stage of some node;
- the metadata agree with the renderers that read them: a trace of lesson
  ``simple`` (the tutorial's walk-through) holds that lesson's nodes with
  their axes and sizes, and a captured trace names its modules' classes.

The first violation raises :class:`~tracer.errors.TraceFormatError` naming
its JSON path (``$.nodes[3].args[0].index``), in one line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from tracer.core import ids, limits
from tracer.errors import TraceFormatError

SCHEMA_FILE = Path(__file__).with_name("trace-format.schema.json")


@cache
def _validator() -> Any:
    """The reference validator (``jsonschema``): it words every error, but walks a big file slowly."""
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


@cache
def _fast() -> Callable[[Any], Any]:
    """The same schema compiled to Python by ``fastjsonschema``: it only finds where the first error is.

    A file at the node limit (20,000 nodes) took ``jsonschema`` tens of
    seconds to walk; compiled, the walk takes about a second.  The schema's
    ``$id`` and ``$schema`` are dropped before compiling: every ``$ref`` in
    it is local (``#/$defs/...``), and with no handlers nothing is ever
    fetched.
    """
    import fastjsonschema

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    schema.pop("$id", None)
    schema.pop("$schema", None)
    compiled: Callable[[Any], Any] = fastjsonschema.compile(schema, handlers={})
    return compiled


def _first_error(doc: dict[str, Any]) -> tuple[str, str] | None:
    """The first violation of the schema as ``(JSON path, message)``, or None.

    The compiled validator walks the whole document; only when it finds an
    error does the reference validator word it, and then over as little as
    shows that error: the one node it is in (its path put back), or the
    document without its nodes.  Should the two validators disagree on
    where, the reference walks the whole document and its verdict stands.
    """
    from fastjsonschema import JsonSchemaValueException

    try:
        _fast()(doc)
        return None
    except JsonSchemaValueException as e:
        path = [str(p) for p in e.path[1:]]  # after the root, "data"
    nodes = doc.get("nodes")
    if isinstance(nodes, list) and path[:1] == ["nodes"]:
        parts = [{**doc, "nodes": [nodes[int(path[1])]]}] if len(path) > 1 and path[1].isdigit() else []
        where = f"$.nodes[{path[1]}]" if parts else ""
    else:
        parts, where = ([{**doc, "nodes": []}] if isinstance(nodes, list) else []), ""
    for part in [*parts, doc]:
        err = _worded(part)
        if err is not None:
            at = err.json_path
            if part is not doc and where and at.startswith("$.nodes[0]"):
                at = where + at[len("$.nodes[0]") :]
            return at, err.message
    return None


def _worded(doc: Any) -> Any:
    """The reference validator's first error, the most telling part of it (inside a ``oneOf``), or None."""
    from jsonschema.exceptions import best_match

    first = next(iter(_validator().iter_errors(doc)), None)  # the first in the schema's own order
    return None if first is None else best_match([first])


class _Bad(Exception):
    """A cross-field violation: (JSON path, message)."""


def count(doc: Any, name: str = "trace") -> None:
    """Refuse more than :data:`~tracer.core.limits.MAX_NODES` nodes; cheap, so it runs before the digest and schema."""
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if isinstance(nodes, list) and len(nodes) > limits.MAX_NODES:
        raise TraceFormatError(
            f"{name}: malformed trace file at $.nodes: {len(nodes):,} nodes is past the limit of {limits.MAX_NODES:,}"
        )


def check(doc: dict[str, Any], name: str = "trace") -> None:
    """Raise :class:`TraceFormatError` for the first violation of the schema or of the cross-field rules."""
    count(doc, name)
    try:
        err = _first_error(doc)
    except RecursionError:
        raise TraceFormatError(f"{name}: malformed trace file: nested too deeply") from None
    if err is not None:
        at, message = err
        raise TraceFormatError(f"{name}: malformed trace file at {at}{_node_name(doc, at)}: {_short(message)}")
    try:
        _cross(doc)
    except _Bad as e:
        where, message = e.args
        raise TraceFormatError(f"{name}: malformed trace file at {where}{_node_name(doc, where)}: {message}") from None


def _node_name(doc: Any, path: str) -> str:
    """`` (node 'omega.p')`` for a path inside a node that has a name, else nothing."""
    m = re.match(r"\$\.nodes\[(\d+)\]", path)
    node = doc["nodes"][int(m.group(1))] if m else None
    label = node.get("name") if isinstance(node, dict) else None
    return f" (node {_short(label, 60)!r})" if isinstance(label, str) else ""


def _short(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


WALKTHROUGH = (
    "x:ik omega.p:ijk omega.s:ijk omega:ij div.sum.s:ij div.sum:i div.alpha:ij div.alpha_sum.s:ij div.alpha_sum:i"
    " naive.exp:ij naive.sum.s:ij naive.sum:i naive.alpha:ij naive.alpha_sum.s:ij naive.alpha_sum:i stable.max:i"
    " stable.shift:ij stable.exp:ij stable.sum.s:ij stable.sum:i alpha:ij alpha_sum.s:ij alpha_sum:i torch.alpha:ij"
    " torch.alpha_sum.s:ij torch.alpha_sum:i check.naive: check.torch: z.t:ijk z.s:ijk z:ik mat.omega:ij mat.alpha:ij"
    " mat.z:ik check.omega: check.alpha: check.z:"
)
"""The nodes the tutorial's walk-through reads, with their axes (``i``, ``j``: tokens; ``k``: components)."""
OVERFLOW = (
    "scaled.c: scaled.x:ik scaled.omega.p:ijk scaled.omega.s:ijk scaled.omega:ij scaled.naive.exp:ij"
    " scaled.naive.sum.s:ij scaled.naive.sum:i scaled.naive.alpha:ij scaled.naive.alpha_sum.s:ij"
    " scaled.naive.alpha_sum:i scaled.stable.max:i scaled.stable.shift:ij scaled.stable.exp:ij"
    " scaled.stable.sum.s:ij scaled.stable.sum:i scaled.alpha:ij scaled.alpha_sum.s:ij scaled.alpha_sum:i"
)
"""Its overflow demonstration (format version 2 on): all of these, or none (a version-1 file)."""
_ITEMSIZE = {"float32": 4, "float64": 8}


def _lesson(doc: dict[str, Any]) -> None:
    """The metadata say which renderer reads the trace; the nodes must be what that renderer reads."""
    meta = doc["meta"]
    if meta.get("captured") is not None:
        modules = meta.get("modules", {})
        if not isinstance(meta["captured"], bool):
            raise _Bad("$.meta.captured", "captured must be true or false")
        if meta["captured"] and (
            not isinstance(modules, dict) or not all(isinstance(v, str) for v in modules.values())
        ):
            raise _Bad("$.meta.modules", "a captured trace names each module's class as text")
    if meta["lesson"] != "simple":
        return
    have = {n["name"]: (k, n) for k, n in enumerate(doc["nodes"])}
    size = {"i": meta["n_tokens"], "j": meta["n_tokens"], "k": meta["dim"]}
    scaled = OVERFLOW.split() if any(n.startswith("scaled.") for n in have) else []
    for entry in WALKTHROUGH.split() + scaled:
        name, _, axes = entry.partition(":")
        if name not in have:
            raise _Bad("$.nodes", f"lesson 'simple' has a node {name!r}, and this trace has none")
        k, node = have[name]
        want = [size[a] for a in axes]
        if node["axes"] != list(axes) or node["value"]["shape"] != want:
            raise _Bad(f"$.nodes[{k}]", f"lesson 'simple' records {name!r} with axes {list(axes)} and shape {want}")


def _cross(doc: dict[str, Any]) -> None:
    meta = doc["meta"]
    t = meta["n_tokens"]
    if t > limits.MAX_TOKENS:
        raise _Bad("$.meta.n_tokens", f"{t} tokens is past the limit of {limits.MAX_TOKENS}")
    if len(meta["tokens"]) != t:
        raise _Bad("$.meta.tokens", f"{len(meta['tokens'])} tokens for n_tokens = {t}")
    if not 1 <= meta["query"] <= t:
        raise _Bad("$.meta.query", f"query {meta['query']} is not one of the {t} tokens")
    if meta["dim"] > limits.MAX_DIM:
        raise _Bad("$.meta.dim", f"dim {meta['dim']} is past the limit of {limits.MAX_DIM}")
    axes_of: dict[str, list[str]] = {}
    total = 0
    for k, node in enumerate(doc["nodes"]):
        at = f"$.nodes[{k}]"
        name, axes, shape = node["name"], node["axes"], node["value"]["shape"]
        if name in axes_of:
            raise _Bad(f"{at}.name", f"a second node called {name!r}")
        if len(set(axes)) != len(axes):
            raise _Bad(f"{at}.axes", f"repeated axis in {axes}")
        split = node["split"]
        if len(split) != name.count(".") + 1 or sum(split) != len(axes):
            raise _Bad(f"{at}.split", f"split {split} does not fit name {name!r} with axes {axes}")
        if len(shape) != len(axes):
            raise _Bad(f"{at}.value.shape", f"{len(shape)} sizes for {len(axes)} axes")
        size = math.prod(shape)
        total += size
        if size > limits.MAX_CELLS or total > limits.MAX_TRACE_CELLS:
            raise _Bad(f"{at}.value.shape", f"{size:,} entries is past the limits (see docs/security.md)")
        if total * _ITEMSIZE[meta["dtype"]] > limits.MAX_TRACE_VALUE_BYTES:
            raise _Bad(
                f"{at}.value.shape",
                f"the values up to here need {total * _ITEMSIZE[meta['dtype']]:,} bytes, past the"
                f" {limits.MAX_TRACE_VALUE_BYTES:,}-byte limit for one trace (see docs/security.md)",
            )
        if node["op"] == "input" and axes[:1] == ["i"] and shape[0] != t:
            raise _Bad(f"{at}.value.shape", f"{shape[0]} rows for {t} tokens")
        for n, arg in enumerate(node["args"]):
            _arg(f"{at}.args[{n}]", arg, name, axes, axes_of)
        _attrs(f"{at}.attrs", node["attrs"], axes, node["args"], axes_of)
        axes_of[name] = axes
    _backward(doc)
    _lesson(doc)


def _backward(doc: dict[str, Any]) -> None:
    """``meta.backward`` (its types are the schema's) must name this file's nodes and stages; so must each
    further output it lists under ``also`` (lesson multihead's wrapper), with its upstream gradient."""
    back = doc["meta"].get("backward")
    if back is None:
        return
    at = "$.meta.backward"
    have = {n["name"]: n for n in doc["nodes"]}
    _pair(at, back, have)
    for n, grad in enumerate(back["gradients"]):
        if grad not in have:
            raise _Bad(f"{at}.gradients[{n}]", f"{grad!r} is not a node of this trace")
    for n, more in enumerate(back.get("also", [])):
        _pair(f"{at}.also[{n}]", more, have)
    stages = {n["stage"] for n in doc["nodes"]}
    for n, stage in enumerate(back["stages"]):
        if stage not in stages:
            raise _Bad(f"{at}.stages[{n}]", f"no node is in stage {stage!r}")


def _pair(at: str, back: dict[str, Any], have: dict[str, dict[str, Any]]) -> None:
    """An output differentiated and its upstream gradient: nodes of the file, the gradient an input of its shape."""
    for key in ("output", "upstream"):
        if back[key] not in have:
            raise _Bad(f"{at}.{key}", f"{back[key]!r} is not a node of this trace")
    out, up = have[back["output"]], have[back["upstream"]]
    if up["op"] != "input":
        raise _Bad(f"{at}.upstream", f"{up['name']!r} is computed ({up['op']}); the upstream gradient is an input")
    if (up["axes"], up["value"]["shape"]) != (out["axes"], out["value"]["shape"]):
        raise _Bad(
            f"{at}.upstream",
            f"{up['name']!r} has axes {up['axes']} and shape {up['value']['shape']}; the output"
            f" {out['name']!r} has axes {out['axes']} and shape {out['value']['shape']}",
        )


def _arg(at: str, arg: dict[str, Any], name: str, axes: list[str], axes_of: dict[str, list[str]]) -> None:
    src = arg["node"]
    if src == name:
        operand = axes
    elif src in axes_of:
        operand = axes_of[src]
    else:
        raise _Bad(f"{at}.node", f"{src!r} is not an earlier node")
    index = arg.get("index")
    if index is None:
        return
    if len(index) != len(operand):
        raise _Bad(f"{at}.index", f"{len(index)} index expressions for {src!r}, which has {len(operand)} axes")
    for expr in index:
        if expr == "*":
            continue
        try:
            used = ids.index_axes(expr)
        except ValueError as e:
            raise _Bad(f"{at}.index", str(e)) from None
        if not used <= set(axes):
            raise _Bad(f"{at}.index", f"{expr!r} is not an axis of {name!r} ({', '.join(axes)})")


def _attrs(
    at: str, attrs: dict[str, Any], axes: list[str], args: list[dict[str, Any]], axes_of: dict[str, list[str]]
) -> None:
    if "over" in attrs:
        over = attrs["over"]
        read = [e for a in args for e in (a.get("index") or [])]
        if not isinstance(over, str) or (over not in axes and "*" not in read):
            raise _Bad(f"{at}.over", f"{over!r} is not an axis this node sums or reduces over")
    if "partials" in attrs and attrs["partials"] not in axes_of:
        raise _Bad(f"{at}.partials", f"{attrs['partials']!r} is not an earlier node")
    if "fill" in attrs:
        try:
            float(attrs["fill"])
        except (TypeError, ValueError, OverflowError):
            raise _Bad(f"{at}.fill", f"{attrs['fill']!r} is not a number") from None
