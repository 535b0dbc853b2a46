"""Trace files: versioned JSON, every value kept bit for bit.

The format is documented in ``docs/trace-format.md`` with a JSON Schema in
``tracer/core/trace-format.schema.json`` (checked on load).  In short::

    {"format": "attn-trace", "version": 3, "meta": {...},
     "nodes": [{"name", "op", "stage", "axes", "split", "granularity",
                "args", "symbol", "latex", "text", "attrs", "value": {...}}, ...],
     "digest": "sha256:..."}

A value is stored in one of three encodings:

``list``
    small, all-finite tensors: the numbers themselves, each the exact decimal
    of the stored float, so the file reads (and diffs) as plain numbers;
``base64``
    the little-endian bytes of the tensor;
``derived``
    for products, quotients and running sums (see :mod:`tracer.core.predict`): the
    value is recomputed from the node's operands on load, and ``patch`` lists
    the flat positions whose stored bits differ from that recomputation with
    the XOR of the bits.  An untouched trace has an empty patch, so a trace
    of T=512, d=64 (67 million values) takes a few megabytes.

``digest`` is the SHA-256 of the canonical JSON of everything else; a file
edited by hand or cut short is refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

from tracer.core import files, formula, ids, limits, validate
from tracer.core.files import quoted
from tracer.core.predict import predict
from tracer.core.trace import ELEMENT, TENSOR, Node, Ref, Trace
from tracer.errors import InputError, TraceFormatError

FORMAT = "attn-trace"

# Version history of the trace file format:
#   1  first version: nodes with list/base64/derived values, SHA-256 digest.
#   2  lesson simple records its overflow demonstration: stage "overflow" (nodes
#      scaled.*) and meta "overflow" ({"factor": 10**n or null, "max_power": 12}),
#      so a report renders from the trace alone.  Nothing else changed: a
#      version-1 file loads as it is, and its report says the overflow section
#      needs a re-trace (tracer.present.overflow.recorded is False for it).
#   3  every node stores its entry's "symbol" (LaTeX with placeholders, "" for a
#      tensor-level node; see tracer.core.formula), which pages use to name an
#      entry instead of cutting its formula at "=".  A version-1 or 2 file
#      loads: its symbols are read from the formulas once, on load
#      (formula.stated_symbol), the way the pages used to read them.
FORMAT_VERSION = 3
SUPPORTED_VERSIONS = (1, 2, 3)

LIST_LIMIT = 1024
"""Largest all-finite tensor written as a list of numbers."""

_DTYPES: dict[str, np.dtype[Any]] = {"float32": np.dtype("<f4"), "float64": np.dtype("<f8")}
_BITS: dict[str, np.dtype[Any]] = {"float32": np.dtype("<u4"), "float64": np.dtype("<u8")}
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


# -- writing -----------------------------------------------------------------
def to_dict(trace: Trace) -> dict[str, Any]:
    """The JSON document for ``trace``, without its digest (``InputError`` if it could not be read back)."""
    fits(trace)
    done: dict[str, np.ndarray] = {}
    axes_of: dict[str, tuple[str, ...]] = {}
    nodes = []
    for n in trace.nodes:
        spec = _spec(n)
        spec["value"] = _encode(n, spec, done, axes_of)
        done[n.name] = n.value
        axes_of[n.name] = n.axes
        nodes.append(spec)
    return {"format": FORMAT, "version": FORMAT_VERSION, "meta": trace.meta, "nodes": nodes}


def fits(trace: Trace) -> None:
    """Refuse to write a trace that :func:`load` would refuse for its size (the limits of docs/security.md).

    A file that cannot be read back is no use to anyone: say so now, with the
    node and the limit, instead of writing gigabytes that every reader refuses.
    """
    if len(trace.nodes) > limits.MAX_NODES:
        raise InputError(
            f"this trace has {len(trace.nodes):,} nodes, past the {limits.MAX_NODES:,} a trace file may hold"
        )
    total = 0
    for n in trace.nodes:
        total += n.value.size
        if n.value.size > limits.MAX_CELLS or total > limits.MAX_TRACE_CELLS:
            raise InputError(
                f"this trace's node {n.name} makes {total:,} entries in all ({n.value.size:,} in it), past what a "
                f"trace file may hold ({limits.MAX_CELLS:,} in one node, {limits.MAX_TRACE_CELLS:,} in all): "
                "use fewer tokens or dims"
            )
        size = total * n.value.dtype.itemsize
        if size > limits.MAX_TRACE_VALUE_BYTES:
            raise InputError(
                f"this trace's values need {size:,} bytes by node {n.name}, past the "
                f"{limits.MAX_TRACE_VALUE_BYTES:,} a trace file may hold: use float32, or fewer tokens or dims"
            )


def dumps(trace: Trace) -> str:
    """The trace file's text."""
    doc = to_dict(trace)
    doc["digest"] = _digest(doc)
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=1, allow_nan=False) + "\n"


def save(trace: Trace, path: str | os.PathLike[str] | IO[str]) -> None:
    """Write ``trace`` to ``path`` atomically (a temporary file renamed into place), or to an open text stream."""
    text = dumps(trace)
    if hasattr(path, "write"):
        path.write(text)
        return
    files.write_atomic(Path(path), text.encode("utf-8"))


def _spec(n: Node) -> dict[str, Any]:
    return {
        "name": n.name,
        "op": n.op,
        "stage": n.stage,
        "axes": list(n.axes),
        "split": list(n.split),
        "granularity": n.granularity,
        "args": [r.to_json() for r in n.args],
        "symbol": n.symbol,
        "latex": n.latex,
        "text": n.text,
        "attrs": n.attrs,
    }


def _encode(
    n: Node, spec: dict[str, Any], done: dict[str, np.ndarray], axes_of: dict[str, tuple[str, ...]]
) -> dict[str, Any]:
    v = n.value
    dt = str(v.dtype)
    if dt not in _DTYPES:
        raise TraceFormatError(f"node {n.name}: cannot store dtype {dt}")
    head: dict[str, Any] = {"dtype": dt, "shape": list(v.shape)}
    if v.size <= LIST_LIMIT and bool(np.isfinite(v).all()):  # no pass over a large tensor that is no list
        return {**head, "encoding": "list", "data": [float(f) for f in v.ravel()]}
    guess = predict(n.op, n.axes, v.shape, spec["args"], n.attrs, done, v.dtype, like=v, axes_of=axes_of)
    if guess is not None and guess.shape == v.shape:
        bits = _BITS[dt]
        a, b = v.view(bits), guess.view(bits)
        if np.array_equal(a, b):
            return {**head, "encoding": "derived", "patch": None}
        xor = np.bitwise_xor(a, b).reshape(-1)  # C order, as positions are counted
        where = np.flatnonzero(xor)
        if where.size * 4 < v.size:
            return {
                **head,
                "encoding": "derived",
                "patch": {"index": _b64(where.astype("<i8")), "xor": _b64(xor[where].astype(bits))},
            }
    return {**head, "encoding": "base64", "data": _b64(np.ascontiguousarray(v, dtype=_DTYPES[dt]))}


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(a.tobytes()).decode("ascii")


def digest(doc: dict[str, Any]) -> str:
    """The digest a trace file carries for ``doc`` (its document without the digest)."""
    return _digest(doc)


def _digest(doc: dict[str, Any]) -> str:
    canon = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


# -- reading -----------------------------------------------------------------
def load(path: str | os.PathLike[str]) -> Trace:
    """Read a trace file; any problem raises :class:`TraceFormatError` with one line."""
    doc, name = read_document(path)
    return from_dict(doc, name)


def read_document(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """Read and parse a trace file's JSON without building the trace: (document, file name as messages quote it).

    :func:`from_dict` checks and builds it; a caller that also wants the
    file's ``version`` (``diff`` reports it) reads it here, parsing once.
    """
    p = Path(path)
    try:
        raw = files.read_limited(p, limits.MAX_TRACE_BYTES, "trace file")
    except FileNotFoundError:
        raise TraceFormatError(f"no such trace file: {quoted(p)}") from None
    except IsADirectoryError:
        raise TraceFormatError(f"{quoted(p)} is a directory, not a trace file") from None
    except files.NotRegular as e:
        raise TraceFormatError(str(e)) from None
    except OSError as e:
        raise TraceFormatError(f"cannot read {quoted(p)}: {e.strerror}") from None
    return parse(raw, quoted(p.name)), quoted(p.name)


def loads(raw: bytes | str, name: str = "trace") -> Trace:
    """Parse a trace file's content (see :func:`load`)."""
    return from_dict(parse(raw, name), name)


def parse(raw: bytes | str, name: str = "trace") -> Any:
    """The JSON document of a trace file's content, unchecked (``TraceFormatError`` if unreadable).

    The values the text spells out are counted first (:func:`json_items`), so a
    file of millions of tiny values is refused in one pass over its bytes
    instead of after seconds of parsing.
    """
    items = json_items(raw)
    if items > limits.MAX_JSON_ITEMS:
        raise TraceFormatError(
            f"{name} is not a readable trace file (it spells out about {items:,} JSON values, "
            f"past the limit of {limits.MAX_JSON_ITEMS:,}: see docs/security.md)"
        )
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite, object_pairs_hook=unique_keys)
    except RecursionError:
        raise TraceFormatError(f"{name} is not a readable trace file (nested too deeply)") from None
    except UnicodeDecodeError:
        raise TraceFormatError(f"{name} is not a trace file (not UTF-8 text)") from None
    except json.JSONDecodeError as e:
        body = text.strip()
        at_end = e.pos >= len(body)  # the parser ran out of text: the file was cut short
        why = (
            "truncated" if not body or at_end or (body.startswith("{") and not body.endswith("}")) else "not valid JSON"
        )
        raise TraceFormatError(f"{name} is not a readable trace file ({why}: {e.msg} at line {e.lineno})") from None
    except ValueError as e:
        raise TraceFormatError(f"{name} is not a readable trace file ({e})") from None


_OTHERS = bytes(range(256)).translate(None, b",[{")
"""Every byte but the three that start or separate JSON values: deleting these from a text leaves those three."""


def json_items(raw: bytes | str) -> int:
    """An upper bound on the JSON values in ``raw``, from one pass over it: its commas and opening brackets.

    Every value but the first of an array or object follows a comma, and every
    array or object opens with a bracket; a comma or bracket inside a string
    only makes the count larger.
    """
    if isinstance(raw, str):
        return raw.count(",") + raw.count("[") + raw.count("{") + 1
    return len(raw.translate(None, _OTHERS)) + 1


def _reject_constant(c: str) -> Any:
    raise ValueError(f"bare {c} is not allowed")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: too large for a float, so never written by attn-trace
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def from_dict(doc: Any, name: str = "trace") -> Trace:
    """Build a trace from a parsed document, checking version, digest and structure."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TraceFormatError(f'{name} is not an attn-trace trace file (no "format": "{FORMAT}")')
    version = doc.get("version")
    if version is None:
        raise TraceFormatError(f"{name} has no format version")
    if version not in SUPPORTED_VERSIONS:
        raise TraceFormatError(
            f"{name} has format version {version!r}, which this attn-trace cannot read "
            f"(it reads version{'s' if len(SUPPORTED_VERSIONS) > 1 else ''} "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))})"
        )
    validate.count(doc, name)  # before the digest, which costs a pass over every node
    digest = doc.get("digest")
    body = {k: v for k, v in doc.items() if k != "digest"}
    if not isinstance(digest, str):
        raise TraceFormatError(f"{name} has no digest")
    try:
        same = _digest(body) == digest
    except (ValueError, RecursionError):  # a value json cannot write back (nesting, a huge int)
        same = False
    if not same:
        raise TraceFormatError(f"{name} was modified after it was written (its digest does not match its content)")
    validate.check(doc, name)
    meta, specs = doc["meta"], doc["nodes"]
    done: dict[str, np.ndarray] = {}
    axes_of: dict[str, tuple[str, ...]] = {}
    nodes = []
    for i, spec in enumerate(specs, 1):
        if not isinstance(spec, dict):
            raise TraceFormatError(f"{name}: malformed node {i}: a node must be an object, got {type(spec).__name__}")
        try:
            nodes.append(_node(spec, done, axes_of))
        except (KeyError, TypeError, ValueError) as e:
            label = spec.get("name")
            raise TraceFormatError(f"{name}: malformed node {i} ({label!r}): {e}") from None
        done[nodes[-1].name] = nodes[-1].value
        axes_of[nodes[-1].name] = nodes[-1].axes
    try:
        return Trace(nodes, meta)
    except ValueError as e:
        raise TraceFormatError(f"{name}: malformed trace file: {e}") from None


def _node(spec: dict[str, Any], done: dict[str, np.ndarray], axes_of: dict[str, tuple[str, ...]]) -> Node:
    for key, kind in (("name", str), ("op", str), ("stage", str), ("axes", list), ("split", list), ("args", list)):
        if not isinstance(spec.get(key), kind):
            raise ValueError(f"{key!r} missing or not a {kind.__name__}")
    gran = spec.get("granularity", ELEMENT)
    if gran not in (ELEMENT, TENSOR):
        raise ValueError(f"unknown granularity {gran!r}")
    args = []
    for a in spec["args"]:
        if not isinstance(a, dict) or not isinstance(a.get("node"), str):
            raise ValueError("an arg must be an object with a node name")
        if a["node"] not in done and a["node"] != spec["name"]:
            raise ValueError(f"arg {a['node']!r} is not an earlier node")
        idx = a.get("index")
        for expr in idx or ():
            if expr != "*":
                ids.index_expr(str(expr))  # ValueError for anything but index arithmetic
        args.append(Ref(a["node"], None if idx is None else tuple(str(x) for x in idx)))
    value = _decode(spec, done, axes_of)
    latex = str(spec.get("latex", ""))
    symbol = spec["symbol"] if "symbol" in spec else formula.stated_symbol(latex, gran == ELEMENT)  # versions 1, 2
    return Node(
        name=spec["name"],
        op=spec["op"],
        stage=spec["stage"],
        axes=tuple(str(a) for a in spec["axes"]),
        split=tuple(int(s) for s in spec["split"]),
        value=value,
        args=tuple(args),
        latex=latex,
        text=str(spec.get("text", "")),
        symbol=str(symbol),
        granularity=gran,
        attrs=dict(spec.get("attrs") or {}),
    )


def _decode(spec: dict[str, Any], done: dict[str, np.ndarray], axes_of: dict[str, tuple[str, ...]]) -> np.ndarray:
    val = spec["value"]
    dt = val["dtype"]
    if dt not in _DTYPES:
        raise ValueError(f"unknown dtype {dt!r}")
    shape = tuple(int(s) for s in val["shape"])
    if any(s < 0 for s in shape):
        raise ValueError(f"negative shape {shape}")
    size = math.prod(shape)
    enc = val["encoding"]
    if enc == "list":
        data = val["data"]
        if not isinstance(data, list) or len(data) != size:
            raise ValueError(f"list of {len(data) if isinstance(data, list) else '?'} values for shape {shape}")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in data):
            raise ValueError("list values must be numbers")
        try:
            wide = np.array(data, dtype=np.float64)  # each number read as a double, however it is spelled
        except OverflowError:  # an integer past the largest double
            raise ValueError(f"a list value is too large for {dt}") from None
        with np.errstate(over="ignore"):
            listed: np.ndarray = wide.astype(_DTYPES[dt]).reshape(shape)
        if not np.isfinite(listed).all():  # a list holds finite values only
            raise ValueError(f"a list value is too large for {dt}")
        return listed
    if enc == "base64":
        buf = _unb64(val["data"])
        if len(buf) != size * _DTYPES[dt].itemsize:
            raise ValueError(f"{len(buf)} bytes of data for shape {shape} of {dt}")
        raw: np.ndarray = np.frombuffer(buf, dtype=_DTYPES[dt]).reshape(shape).copy()
        return raw
    if enc == "derived":
        return _derive(spec, val, shape, dt, done, axes_of)
    raise ValueError(f"unknown encoding {enc!r}")


def _derive(
    spec: dict[str, Any],
    val: dict[str, Any],
    shape: tuple[int, ...],
    dt: str,
    done: dict[str, np.ndarray],
    axes_of: dict[str, tuple[str, ...]],
) -> np.ndarray:
    bits = _BITS[dt]
    patch = val.get("patch")
    where: np.ndarray | None = None
    xor: np.ndarray | None = None
    if patch is not None:
        where = np.frombuffer(_unb64(patch["index"]), dtype="<i8")
        xor = np.frombuffer(_unb64(patch["xor"]), dtype=bits)
        size = math.prod(shape)
        if where.size != xor.size or (where.size and (where.min() < 0 or where.max() >= size)):
            raise ValueError("patch positions do not fit the value")
    axes = tuple(spec["axes"])
    fix: Callable[[int, np.ndarray], np.ndarray] | None = None
    if where is not None and xor is not None and spec["op"] == "acc":
        fix = _slice_fixer(where, xor, shape, axes.index(spec["attrs"]["over"]), bits)
    attrs = spec.get("attrs") or {}
    guess = predict(spec["op"], axes, shape, spec["args"], attrs, done, _DTYPES[dt], fix, axes_of=axes_of)
    if guess is None or guess.shape != shape:
        raise ValueError(f"op {spec['op']!r} cannot be derived from its operands")
    out: np.ndarray = guess.astype(_DTYPES[dt], copy=False)
    if where is not None and xor is not None and fix is None:
        out = out.copy()  # the guess may be a read-only view of an operand (a total is its partials' last entry)
        out.view(bits)[np.unravel_index(where, shape)] ^= xor
    return out


def _slice_fixer(
    where: np.ndarray, xor: np.ndarray, shape: tuple[int, ...], ax: int, bits: np.dtype
) -> Callable[[int, np.ndarray], np.ndarray]:
    """Apply a patch to a running sum slice by slice, so each sum builds on the stored previous one."""
    coords = np.unravel_index(where, shape)
    pos_in_axis = coords[ax]
    rest_shape = tuple(s for d, s in enumerate(shape) if d != ax)
    rest = tuple(c for d, c in enumerate(coords) if d != ax)
    flat_rest = np.ravel_multi_index(rest, rest_shape) if rest_shape else np.zeros_like(where)

    def fix(n: int, piece: np.ndarray) -> np.ndarray:
        sel = pos_in_axis == n
        if sel.any():
            flat = np.ascontiguousarray(piece).view(bits).reshape(-1)
            flat[flat_rest[sel]] ^= xor[sel]
            return flat.view(piece.dtype).reshape(piece.shape)
        return piece

    return fix


def _unb64(s: Any) -> bytes:
    if not isinstance(s, str):
        raise ValueError("base64 data must be a string")
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as e:
        raise ValueError(f"bad base64 data: {e}") from None


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (``json.loads``'s ``object_pairs_hook``).

    Python's parser keeps the last of two equal keys, silently; another
    reader may keep the first, so a file from someone else could say one
    thing to attn-trace and another to the tool beside it.  A repeated key
    is refused (``ValueError``, which each loader turns into its one line).
    """
    got: dict[str, Any] = {}
    for key, value in pairs:
        if key in got:
            raise ValueError(f"the key {key!r} appears twice in one object")
        got[key] = value
    return got
