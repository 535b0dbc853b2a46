"""Trace files: bit-for-bit round trips, compact storage, and clear errors."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import json
import math
import re
from functools import cache
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import tracer
from tracer.core import serialize
from tracer.core.trace import Node, Ref, Trace
from tracer.errors import TraceFormatError

SCHEMA = json.loads((Path(__file__).parent.parent / "tracer" / "core" / "trace-format.schema.json").read_text())


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def assert_identical(a: Trace, b: Trace) -> None:
    assert a.meta == b.meta
    assert [n.name for n in a.nodes] == [n.name for n in b.nodes]
    for x, y in zip(a.nodes, b.nodes, strict=True):
        assert (x.op, x.stage, x.axes, x.split, x.args, x.latex, x.text, x.granularity, x.attrs) == (
            y.op,
            y.stage,
            y.axes,
            y.split,
            y.args,
            y.latex,
            y.text,
            y.granularity,
            y.attrs,
        ), x.name
        assert x.value.dtype == y.value.dtype and x.value.shape == y.value.shape, x.name
        assert bits(x.value) == bits(y.value), x.name


def roundtrip(t: Trace, tmp_path: Path) -> Trace:
    path = tmp_path / "t.json"
    t.save(path)
    return tracer.load(path)


def random_inputs(t: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (t, d))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("t", "d"), [(6, 3), (1, 1), (40, 30)])
def test_roundtrip_bit_for_bit(tmp_path: Path, dtype: str, t: int, d: int) -> None:
    trace = tracer.trace_self_attention(random_inputs(t, d), query=1, dtype=dtype)
    assert_identical(trace, roundtrip(trace, tmp_path))


def test_tutorial_roundtrip_and_schema(tutorial: Trace, tmp_path: Path) -> None:
    back = roundtrip(tutorial, tmp_path)
    assert_identical(tutorial, back)
    assert back["omega[2,1]"].value == tutorial["omega[2,1]"].value
    doc = json.loads((tmp_path / "t.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    # small tensors are stored as plain numbers, readable in a diff
    x = next(n for n in doc["nodes"] if n["name"] == "x")
    assert x["value"]["encoding"] == "list"
    assert np.float32(x["value"]["data"][0]) == np.float32(0.43)


def test_overflow_nan_and_inf_roundtrip(tmp_path: Path) -> None:
    """NaN payloads and signs survive: non-finite tensors are stored as raw bytes."""
    trace = tracer.trace_self_attention(np.array(tracer.record.inputs.TUTORIAL_INPUTS) * 10)
    back = roundtrip(trace, tmp_path)
    assert_identical(trace, back)
    assert np.isinf(back.tensor("naive.exp")).any() and np.isnan(back.tensor("naive.alpha")).any()
    jsonschema.validate(json.loads((tmp_path / "t.json").read_text()), SCHEMA)


def _with_value(trace: Trace, name: str, value: np.ndarray) -> Trace:
    """``trace`` with node ``name`` holding ``value`` instead of what it recorded."""
    return Trace([dataclasses.replace(n, value=value) if n.name == name else n for n in trace.nodes], trace.meta)


@cache
def big(lesson: str) -> Trace:
    """A lesson's trace of 40 tokens of 30 dimensions: big enough that its products and sums are stored derived."""
    return tracer.trace_lesson(lesson, inputs=random_inputs(40, 30, seed=2), query=1)


@pytest.mark.parametrize(
    ("lesson", "name"),
    [
        *(("simple", name) for name in ("omega.p", "omega.s", "z.t", "z.s", "div.alpha")),
        ("simple", "omega"),  # a total: recomputed as its running sums' last entries
        ("simple", "z"),
        ("causal", "neg.omega"),  # a masked fill
    ],
)
def test_derived_values_keep_edits(tmp_path: Path, lesson: str, name: str) -> None:
    """A value that is not what its operands give (a bug, an edit) is kept exactly, not recomputed away.

    An edited total or masked fill used to be saved and then refused on load
    ("assignment destination is read-only"): its recomputation is a view of an
    operand, and the patch was applied to that view.
    """
    trace = big(lesson)
    node = trace.node(name)
    where = tuple(s // 2 for s in node.value.shape)
    value = node.value.copy()
    value[where] = 123.25
    edited = _with_value(trace, name, value)
    doc = serialize.to_dict(edited)
    spec = next(n for n in doc["nodes"] if n["name"] == name)
    assert node.value.size > serialize.LIST_LIMIT  # so the node is stored derived, with the edit as a patch
    assert spec["value"]["encoding"] == "derived" and spec["value"]["patch"] is not None
    back = roundtrip(edited, tmp_path)
    assert_identical(edited, back)
    assert back.node(name).value[where] == 123.25


def test_lists_hold_at_most_1024_values() -> None:
    """Tensors of up to 1,024 finite values are stored as plain numbers (docs/trace-format.md), larger ones as bytes."""
    for (t, d), encoding in (((32, 32), "list"), ((41, 25), "base64")):
        doc = serialize.to_dict(tracer.trace_self_attention(random_inputs(t, d), query=1))
        x = next(n for n in doc["nodes"] if n["name"] == "x")
        assert (t * d, x["value"]["encoding"]) == (t * d, encoding)


def test_a_value_unlike_its_recomputation_is_stored_as_bytes() -> None:
    """A patch entry costs 12 bytes (its position and bits) against 4 for a float32: a value that differs from
    what its operands give nearly everywhere is stored as plain bytes, not as a patch larger than itself."""
    v = big("simple").node("div.alpha").value
    moved = np.nextafter(v, np.float32(np.inf))  # every entry one unit in the last place up
    edited = _with_value(big("simple"), "div.alpha", moved)
    spec = next(n for n in serialize.to_dict(edited)["nodes"] if n["name"] == "div.alpha")
    assert spec["value"]["encoding"] == "base64"
    assert bits(serialize.loads(serialize.dumps(edited)).tensor("div.alpha")) == bits(moved)


def test_large_trace_is_stored_compactly(tmp_path: Path) -> None:
    trace = tracer.trace_self_attention(random_inputs(64, 32, seed=1), query=1)
    path = tmp_path / "t.json"
    trace.save(path)
    raw_bytes = sum(n.value.nbytes for n in trace.nodes)
    assert path.stat().st_size < raw_bytes / 5
    doc = json.loads(path.read_text())
    derived = {n["name"] for n in doc["nodes"] if n["value"]["encoding"] == "derived"}
    assert {"omega.p", "omega.s", "z.t", "z.s"} <= derived
    assert_identical(trace, tracer.load(path))


def test_same_trace_same_bytes(tutorial: Trace) -> None:
    assert serialize.dumps(tutorial) == serialize.dumps(tracer.trace_self_attention())


def test_a_running_sum_over_its_only_axis_and_an_empty_value_round_trip(tutorial: Trace, tmp_path: Path) -> None:
    """Any trace that saves loads back: here a dot product's 2,000 running sums, two of them edited (so stored
    derived with a patch, as in captured code), and a tensor with no entries."""
    terms = np.linspace(-1, 1, 2000, dtype=np.float32)
    sums = np.add.accumulate(terms, dtype=np.float32)
    sums[[10, 1500]] = [5.0, -7.25]
    extra = [
        Node(name="v", op="input", stage="scores", axes=("k",), split=(1,), value=terms),
        Node(
            name="vs",
            op="acc",
            stage="scores",
            axes=("k",),
            split=(1,),
            value=sums,
            args=(Ref("vs", ("k-1",)), Ref("v", ("k",))),
            attrs={"over": "k"},
        ),
        Node(name="none", op="input", stage="scores", axes=("k",), split=(1,), value=np.zeros(0, np.float32)),
    ]
    trace = Trace([*tutorial.nodes, *extra], tutorial.meta)
    vs = next(n for n in serialize.to_dict(trace)["nodes"] if n["name"] == "vs")
    assert vs["value"]["encoding"] == "derived" and vs["value"]["patch"] is not None
    back = roundtrip(trace, tmp_path)
    assert_identical(trace, back)
    assert back.tensor("vs")[[10, 1500]].tolist() == [5.0, -7.25] and back.tensor("none").shape == (0,)


@pytest.mark.parametrize("dtype", ["float16", ">f4"])
def test_a_value_of_another_dtype_is_refused_when_saving(tutorial: Trace, tmp_path: Path, dtype: str) -> None:
    """Only little-endian float32 and float64 are stored; anything else is one line naming the node, no file."""
    trace = _with_value(tutorial, "x", tutorial.node("x").value.astype(dtype))
    with pytest.raises(TraceFormatError, match=rf"^node x: cannot store dtype {re.escape(str(np.dtype(dtype)))}$"):
        trace.save(tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


def test_a_file_is_sorted_utf8_json_with_the_documented_digest() -> None:
    """docs/trace-format.md: keys sorted, text written as itself (a file diffs line by line in any language), and
    ``digest`` = "sha256:" + SHA-256 of the canonical JSON of the rest: sorted keys, no spaces, UTF-8."""
    trace = tracer.trace_self_attention(np.array(tracer.record.inputs.TUTORIAL_INPUTS[:3]), ["你的", "旅程", "开始"])
    text = serialize.dumps(trace)
    assert '"你的",' in text and "\\u4f60" not in text
    keys: list[list[str]] = []
    doc = json.loads(text, object_pairs_hook=lambda pairs: keys.append([k for k, _ in pairs]) or dict(pairs))
    assert keys[-1] == ["digest", "format", "meta", "nodes", "version"]
    assert all(k == sorted(k) for k in keys)
    body = {k: v for k, v in doc.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert doc["digest"] == "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    # the same recipe spelled out on a small document
    small = '{"a":"é","b":[1,2.5]}'
    assert serialize._digest({"b": [1, 2.5], "a": "é"}) == "sha256:" + hashlib.sha256(small.encode("utf-8")).hexdigest()


# -- bad files -------------------------------------------------------------------
@pytest.fixture
def good_text(tutorial: Trace) -> str:
    return serialize.dumps(tutorial)


def _reseal(doc: dict[str, object]) -> str:
    body = {k: v for k, v in doc.items() if k != "digest"}
    doc["digest"] = serialize._digest(body)
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda text: text[: len(text) // 2], "truncated"),
        (lambda text: "", "truncated"),
        (lambda text: text[: text.index("}") + 1], "truncated"),  # cut right after an inner '}'
        (lambda text: text.rstrip()[:-1].rstrip() + "]}", "not valid JSON"),  # complete, but brackets crossed
        (lambda text: "hello", "not valid JSON"),
        (lambda text: text.replace('"data": [', '"data": [NaN, ', 1), "bare NaN is not allowed"),
        (lambda text: "[1, 2]", "not an attn-trace trace file"),
        (lambda text: text.replace(f'"version": {serialize.FORMAT_VERSION}', '"version": 99'), "format version 99"),
        (lambda text: text.replace(f',\n "version": {serialize.FORMAT_VERSION}', ""), "has no format version"),
        (lambda text: text.replace("0.5500", "0.5501", 1), "modified after it was written"),
        (lambda text: text.replace('"digest": "sha256:', '"digest": "sha256:0', 1), "modified after it was written"),
    ],
)
def test_bad_files_are_refused_with_one_line(tmp_path: Path, good_text: str, mutate: object, message: str) -> None:
    assert callable(mutate)
    path = tmp_path / "bad.json"
    bad = mutate(good_text)
    assert bad != good_text
    path.write_text(bad)
    with pytest.raises(TraceFormatError, match=message) as err:
        tracer.load(path)
    assert "\n" not in str(err.value)


def test_malformed_node_with_valid_digest(good_text: str) -> None:
    doc = json.loads(good_text)
    doc["nodes"][1]["value"]["shape"] = [7]
    with pytest.raises(TraceFormatError, match=r"at \$\.nodes\[1\]\.value\.shape \(node 'omega.p'\)"):
        serialize.loads(_reseal(doc))
    doc = json.loads(good_text)
    doc["nodes"][0]["args"] = [{"node": "later"}]
    with pytest.raises(TraceFormatError, match="not an earlier node"):
        serialize.loads(_reseal(doc))


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such trace file"):
        tracer.load(tmp_path / "nope.json")
    with pytest.raises(TraceFormatError, match="is a directory"):
        tracer.load(tmp_path)
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TraceFormatError, match="not UTF-8"):
        tracer.load(tmp_path / "bin.json")


@pytest.mark.parametrize("nodes", [[1], ["x"], [None]])
def test_a_node_that_is_not_an_object_is_named(tmp_path: Path, good_text: str, nodes: list[object]) -> None:
    """``tracer.load`` itself says which node is malformed (it used to raise AttributeError)."""
    doc = json.loads(good_text)
    doc["nodes"] = nodes
    path = tmp_path / "bad.json"
    path.write_text(_reseal(doc))
    with pytest.raises(
        TraceFormatError, match=r"'bad.json': malformed trace file at \$\.nodes\[0\]: .* is not of type 'object'"
    ):
        tracer.load(path)


def test_loads_names_the_text_it_reads(tutorial: Trace, good_text: str) -> None:
    """Text that did not come from a file is called "trace" in messages, or by the name the caller gives."""
    with pytest.raises(TraceFormatError, match=r"^trace is not a readable trace file \(not valid JSON"):
        serialize.loads("hello")
    with pytest.raises(TraceFormatError, match=r"^pinned.json is not a readable trace file"):
        serialize.loads("hello", "pinned.json")
    doc = json.loads(good_text)
    doc["version"] = 99
    with pytest.raises(TraceFormatError, match=r"^pinned.json has format version 99"):
        serialize.loads(_reseal(doc), "pinned.json")
    with pytest.raises(TraceFormatError, match=r"^trace has format version 99"):
        serialize.loads(_reseal(doc))
    assert_identical(tutorial, serialize.loads(good_text.encode("utf-8")))


@pytest.fixture(scope="module")
def big_doc() -> dict[str, object]:
    """A trace big enough for all three encodings: ``x`` in base64, ``omega.p`` derived, ``div.sum`` a list."""
    doc = serialize.to_dict(tracer.trace_self_attention(random_inputs(40, 30, seed=2), query=1))
    encodings = {n["name"]: n["value"]["encoding"] for n in doc["nodes"]}  # type: ignore[attr-defined]
    assert (encodings["x"], encodings["omega.p"], encodings["div.sum"]) == ("base64", "derived", "list")
    return doc


def _patch(index: list[int], xor: list[int]) -> dict[str, str]:
    return {"index": serialize._b64(np.array(index, "<i8")), "xor": serialize._b64(np.array(xor, "<u4"))}


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("div.sum", lambda v: v["data"].pop(), r"malformed node 6 \('div.sum'\): list of 39 values for shape \(40,\)$"),
        ("x", lambda v: v.update(data=v["data"][:-8]), r"\('x'\): 4794 bytes of data for shape \(40, 30\) of float32$"),
        ("x", lambda v: v.update(data="!!!!"), r"malformed node 1 \('x'\): bad base64 data: "),
        ("x", lambda v: v.update(data="é"), r"malformed node 1 \('x'\): bad base64 data: "),
        (
            "omega.p",
            lambda v: v.update(patch=_patch([10**9], [1])),
            r"\('omega.p'\): patch positions do not fit the value$",
        ),
        (
            "omega.p",
            lambda v: v.update(patch=_patch([math.prod(v["shape"])], [1])),  # one past the last entry
            r"\('omega.p'\): patch positions do not fit the value$",
        ),
        (
            "omega.p",
            lambda v: v.update(patch=_patch([-1], [1])),
            r"\('omega.p'\): patch positions do not fit the value$",
        ),
        (
            "omega.p",
            lambda v: v.update(patch=_patch([1, 2], [1])),
            r"\('omega.p'\): patch positions do not fit the value$",
        ),
    ],
)
def test_values_that_do_not_fit_their_node_are_refused(
    big_doc: dict[str, object], name: str, change: object, message: str
) -> None:
    """Past the schema (a resealed digest), a value must still fit its shape and dtype, and a patch its value."""
    doc = copy.deepcopy(big_doc)
    node = next(n for n in doc["nodes"] if n["name"] == name)  # type: ignore[attr-defined]
    assert callable(change)
    change(node["value"])
    with pytest.raises(TraceFormatError, match=r"^trace: " + message if message.startswith("malformed") else message):
        serialize.loads(_reseal(doc))


def test_a_derived_value_needs_an_op_that_derives_it(big_doc: dict[str, object]) -> None:
    doc = copy.deepcopy(big_doc)
    next(n for n in doc["nodes"] if n["name"] == "omega.p")["op"] = "input"  # type: ignore[attr-defined]
    with pytest.raises(TraceFormatError, match=r"^trace: malformed node 2 \('omega.p'\): op 'input' cannot be derived"):
        serialize.loads(_reseal(doc))


def test_a_patch_at_the_edges_of_a_value(big_doc: dict[str, object]) -> None:
    """A patch may touch the first and the last entry of a derived value (and nothing past it)."""
    doc = copy.deepcopy(big_doc)
    spec = next(n for n in doc["nodes"] if n["name"] == "omega.p")  # type: ignore[attr-defined]
    size = math.prod(spec["value"]["shape"])
    spec["value"]["patch"] = _patch([0, size - 1], [1, 1])
    back = serialize.loads(_reseal(doc)).tensor("omega.p")
    plain = serialize.loads(_reseal(copy.deepcopy(big_doc))).tensor("omega.p")
    flipped = (back.view("<u4") ^ plain.view("<u4")).reshape(-1)
    assert np.flatnonzero(flipped).tolist() == [0, size - 1] and flipped[0] == 1 and flipped[-1] == 1


def test_save_to_an_open_stream(tutorial: Trace) -> None:
    stream = io.StringIO()
    serialize.save(tutorial, stream)
    assert stream.getvalue() == serialize.dumps(tutorial)


def test_a_trace_file_past_the_size_limit(tmp_path: Path, good_text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.json"
    path.write_text(good_text)
    monkeypatch.setattr(serialize.limits, "MAX_TRACE_BYTES", 1000)
    with pytest.raises(
        TraceFormatError, match=r"^'[^']*big.json' is [0-9,]+ bytes, past the 1,000-byte limit for a trace file$"
    ):
        tracer.load(path)
