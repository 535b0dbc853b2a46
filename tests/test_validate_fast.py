"""A trace file is checked against its schema by a compiled validator; the reference one only words an error.

Loading a file at the node limit used to take tens of seconds, all of it in
``jsonschema`` walking every node.  These tests count what the reference
validator is given, so a slow path creeping back fails here, not in a
stopwatch: nothing for a valid file, one node for an error inside a node.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.hostile import many_nodes, seal
from tracer.core import serialize, validate
from tracer.errors import TraceFormatError


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many nodes each call of the reference validator was given."""
    seen: list[int] = []
    real = validate._worded

    def counting(doc: Any) -> Any:
        seen.append(len(doc["nodes"]) if isinstance(doc, dict) and isinstance(doc.get("nodes"), list) else -1)
        return real(doc)

    monkeypatch.setattr(validate, "_worded", counting)
    return seen


def test_a_valid_file_is_never_walked_by_the_reference_validator(walked: list[int]) -> None:
    doc = many_nodes(20)
    trace = serialize.loads(seal(doc))
    assert len(trace.nodes) == len(doc["nodes"]) > 1000 and walked == []


@pytest.mark.parametrize(
    ("spoil", "where", "problem"),
    [
        (lambda n: n.__setitem__("split", "x"), "split", "'x' is not of type 'array'"),
        (lambda n: n["value"].__setitem__("dtype", "float16"), "value.dtype", "'float16' is not one of"),
        (lambda n: n["args"].append({"node": "x", "index": ["i;k"]}), "args[", "does not match"),
    ],
)
def test_an_error_in_one_node_is_worded_from_that_node_alone(
    walked: list[int], spoil: Any, where: str, problem: str
) -> None:
    doc = many_nodes(20)
    bad = 700
    spoil(doc["nodes"][bad])
    with pytest.raises(TraceFormatError) as caught:
        serialize.loads(seal(doc))
    said = str(caught.value)
    assert f"at $.nodes[{bad}].{where}" in said and f"(node {doc['nodes'][bad]['name']!r}): " in said, said
    assert problem in said, said
    assert walked == [1]  # one node, not 1,200


@pytest.mark.parametrize("spoil", ["node", "meta"])
def test_the_wording_is_what_a_walk_of_the_whole_document_gives(spoil: str) -> None:
    doc = many_nodes(3)
    if spoil == "node":
        doc["nodes"][100]["value"]["shape"] = [-1]
    else:
        doc["meta"]["query"] = 0
    with pytest.raises(TraceFormatError) as caught:
        serialize.loads(seal(doc))
    whole = validate._worded(json.loads(seal(doc)))  # the reference validator over every node
    said = str(caught.value)
    assert said.startswith(f"trace: malformed trace file at {whole.json_path}") and said.endswith(f": {whole.message}")


def test_the_compiled_schema_fetches_nothing() -> None:
    """Every reference in the schema is local: compiling it opens no URL (the ``$id`` is not a place)."""
    schema = json.loads(validate.SCHEMA_FILE.read_text(encoding="utf-8"))
    refs = json.dumps(schema).split('"$ref": ')[1:]
    assert refs and all(r.startswith('"#/') for r in refs)
    validate._fast.cache_clear()
    assert callable(validate._fast())
