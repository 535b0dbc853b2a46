"""Property-based fuzzing of the loaders: a mutated trace or inputs file gives a result or our own error, nothing else.

Hypothesis mutates a small valid trace document (a value anywhere replaced by
hostile JSON, a key dropped, the digest recomputed as an attacker would or
left stale) and the bytes of whole files (flips, cuts), and mutates inputs
files in every format the CLI reads.  The outcome must be a loaded trace
(which then verifies and explains without crashing) or a
:class:`~tracer.errors.TracerError`.  Runs are derandomized (seeded by the
test's name) and bounded by example counts, about 30 seconds in all.
"""

from __future__ import annotations

import contextlib
import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracer
from tests.hostile import seal
from tracer.core import serialize
from tracer.errors import TracerError
from tracer.present.explain import explain
from tracer.present.report import slug
from tracer.record import inputs

SETTINGS = settings(
    derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck), max_examples=200
)

hostile_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "x", "*", "i-1", "float32", "<script>", "../../x", "omega", "\\text{<b>}", "1e999"])
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@cache
def _doc() -> str:
    x = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]]
    return json.dumps(serialize.to_dict(tracer.trace_self_attention(x, ["a", "b", "c"])))


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:4]):  # the first few entries of long lists are enough
            out += _paths(v, (*prefix, i))
    return out


def _mutate(doc: dict[str, Any], path: tuple[Any, ...], value: Any, drop: bool) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    if not path:
        return out
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return out


def _use(text: str | bytes) -> None:
    """Load as the CLI does; a trace that loads must also verify, name its report folder and explain."""
    try:
        t = serialize.loads(text, "fuzz.json")
    except TracerError:
        return
    t.verify()
    assert isinstance(slug(t), str) and 1 <= t.query <= len(t.tokens) and t.dtype in ("float32", "float64")
    step = next(iter(t), None)
    if step is not None:
        with contextlib.suppress(TracerError):
            explain(t, step.id)


@SETTINGS
@given(data=st.data(), value=hostile_json, drop=st.booleans(), reseal=st.booleans())
def test_mutated_trace_documents(data: st.DataObject, value: Any, drop: bool, reseal: bool) -> None:
    doc = json.loads(_doc())
    every = _paths(doc)
    meta = [p for p in every if p[:1] == ("meta",)]  # few paths but many ways to go wrong: drawn as often
    path = data.draw(st.sampled_from(meta) | st.sampled_from(every))
    bad = _mutate(doc, path, value, drop)
    _use(seal(bad) if reseal else json.dumps(bad))


@SETTINGS
@given(data=st.data(), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4))
def test_byte_flips_and_cuts(data: st.DataObject, flips: list[tuple[int, int]]) -> None:
    raw = bytearray(seal(json.loads(_doc())).encode())
    for pos, byte in flips:
        raw[pos % len(raw)] = byte
    cut = data.draw(st.integers(0, len(raw)))
    _use(bytes(raw[:cut]) if data.draw(st.booleans()) else bytes(raw))


rows = st.lists(st.lists(hostile_json, min_size=0, max_size=4), max_size=4)


@SETTINGS
@given(content=st.one_of(rows, hostile_json, st.fixed_dictionaries({"inputs": hostile_json, "tokens": hostile_json})))
def test_mutated_json_inputs(tmp_path_factory: Any, content: Any) -> None:
    path = Path(tmp_path_factory.mktemp("fuzz")) / "in.json"
    path.write_text(json.dumps(content))
    _inputs(path)


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from(list('0123456789.,;-e+ \n"abcinfNa')), max_size=60))
def test_mutated_csv_inputs(tmp_path_factory: Any, text: str) -> None:
    path = Path(tmp_path_factory.mktemp("fuzz")) / "in.csv"
    path.write_text(text)
    _inputs(path)


@SETTINGS
@given(flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=3))
def test_mutated_npy_inputs(tmp_path_factory: Any, flips: list[tuple[int, int]]) -> None:
    path = Path(tmp_path_factory.mktemp("fuzz")) / "in.npy"
    np.save(path, np.arange(6.0).reshape(3, 2))
    raw = bytearray(path.read_bytes())
    for pos, byte in flips:
        raw[pos % len(raw)] = byte
    path.write_bytes(bytes(raw))
    _inputs(path)


def _inputs(path: Path) -> None:
    try:
        data, tokens = inputs.read_file(path)
        inputs.validate(data, tokens)
    except TracerError:
        pass
