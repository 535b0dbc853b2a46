"""Trace files: bit-for-bit round trips, compact storage, and clear errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import tracer
from tracer.core import serialize
from tracer.core.trace import Trace
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


def _replace(trace: Trace, name: str, edit: tuple[tuple[int, ...], float]) -> Trace:
    nodes = []
    for n in trace.nodes:
        if n.name == name:
            v = n.value.copy()
            v[edit[0]] = edit[1]
            n = dataclasses.replace(n, value=v)
        nodes.append(n)
    return Trace(nodes, trace.meta)


@pytest.mark.parametrize("name", ["omega.p", "omega.s", "z.t", "z.s", "div.alpha"])
def test_derived_values_keep_edits(tmp_path: Path, name: str) -> None:
    """A value that is not what its operands give (a bug, an edit) is kept exactly, not recomputed away."""
    trace = tracer.trace_self_attention(random_inputs(40, 30, seed=2), query=1)
    node = trace.node(name)
    where = tuple(s // 2 for s in node.value.shape)
    edited = _replace(trace, name, (where, 123.25))
    doc = serialize.to_dict(edited)
    spec = next(n for n in doc["nodes"] if n["name"] == name)
    assert node.value.size > serialize.LIST_LIMIT  # so the node is stored derived, with the edit as a patch
    assert spec["value"]["encoding"] == "derived" and spec["value"]["patch"] is not None
    back = roundtrip(edited, tmp_path)
    assert_identical(edited, back)
    assert back.node(name).value[where] == 123.25


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
        TraceFormatError, match=r"bad.json: malformed trace file at \$\.nodes\[0\]: .* is not of type 'object'"
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
