"""A trace file with a valid digest and a wrong structure is refused on load, by the JSON path of its first fault."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import tracer
from tests.hostile import seal
from tracer.cli import app
from tracer.core import serialize
from tracer.errors import TraceFormatError


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return serialize.to_dict(tracer.trace_lesson("simple"))


def _node(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in d["nodes"] if n["name"] == name)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        *head, last = path.split(".")
        target = d
        for key in head:
            target = target[key]
        target[last] = value

    return edit


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("nodes-int", _set("nodes", [5]), r"\$\.nodes\[0\]"),
    ("tokens-int", _set("meta.tokens", 5), r"\$\.meta\.tokens"),
    ("tokens-null", _set("meta.tokens", None), r"\$\.meta\.tokens"),
    ("tokens-short", _set("meta.tokens", ["a", "b"]), r"\$\.meta\.tokens: 2 tokens for n_tokens = 6"),
    ("tokens-ints", _set("meta.tokens", [1, 2, 3, 4, 5, 6]), r"\$\.meta\.tokens\[0\]"),
    ("query-99", _set("meta.query", 99), r"\$\.meta\.query: query 99 is not one of the 6 tokens"),
    ("query-null", _set("meta.query", None), r"\$\.meta\.query"),
    ("query-huge", _set("meta.query", 10**30), r"\$\.meta\.query"),
    ("dtype-null", _set("meta.dtype", None), r"\$\.meta\.dtype"),
    ("n-tokens-huge", _set("meta.n_tokens", 10**9), r"\$\.meta\.n_tokens"),
    ("heads-text", _set("meta.heads", "2"), r"\$\.meta\.heads"),
    ("weights-int", _set("meta.weights", 5), r"\$\.meta\.weights"),
    ("weights-seed", _set("meta.weights", {"kind": "rand", "seed": "abc"}), r"\$\.meta\.weights\.seed"),
    ("dropout-p", _set("meta.dropout", {"p": "x", "seed": 1}), r"\$\.meta\.dropout\.p"),
    ("dropout-seed", _set("meta.dropout", {"p": 0.5, "seed": 1.5e300}), r"\$\.meta\.dropout\.seed"),
    (
        "args-arity",
        lambda d: _node(d, "omega.p")["args"][0].update(index=["i"]),
        r"args\[0\]\.index.*1 index expressions",
    ),
    ("args-later", lambda d: _node(d, "omega.p")["args"][0].update(node="alpha"), r"args\[0\]\.node.*not an earlier"),
    ("args-axis", lambda d: _node(d, "omega.p")["args"][0].update(index=["q", "k"]), r"'q' is not an axis"),
    ("shape-axes", lambda d: _node(d, "omega.p")["value"].update(shape=[6, 6]), r"value\.shape.*2 sizes for 3 axes"),
    ("rows-tokens", lambda d: _node(d, "x")["value"].update(shape=[5, 3]), r"5 rows for 6 tokens"),
    ("split", lambda d: _node(d, "omega.p").update(split=[1, 1]), r"\.split"),
    ("over", lambda d: _node(d, "omega.s")["attrs"].update(over="zz"), r"attrs\.over"),
    ("partials", lambda d: _node(d, "omega")["attrs"].update(partials="nope"), r"attrs\.partials"),
    ("name", lambda d: _node(d, "omega").update(name="../../x"), r"\.name"),
    ("duplicate", lambda d: d["nodes"].append(dict(d["nodes"][0])), r"a second node called 'x'"),
    (
        "huge-derived",
        lambda d: _node(d, "omega.p")["value"].update(shape=[100000, 100000, 3], encoding="derived", patch=None),
        r"past the limits",
    ),
]


@pytest.mark.parametrize(("case", "edit", "where"), CASES, ids=[c[0] for c in CASES])
def test_structure_is_checked_on_load(
    doc: dict[str, Any], case: str, edit: Callable[[dict[str, Any]], None], where: str
) -> None:
    d = json.loads(json.dumps(doc))
    edit(d)
    with pytest.raises(TraceFormatError, match=where) as e:
        serialize.loads(seal(d), "evil.json")
    assert "\n" not in str(e.value) and str(e.value).startswith("evil.json: malformed trace file at $.")


def test_huge_and_nonfinite_numbers_are_refused(doc: dict[str, Any]) -> None:
    text = seal(doc)
    cut = text.index('"data": [') + len('"data": [')
    for number in ("1e999", "-1e999", "1" * 5000):
        with pytest.raises(TraceFormatError, match="not a readable trace file"):
            serialize.loads(text[:cut] + number + ", " + text[cut:], "t.json")


@pytest.mark.parametrize(("number", "shown"), [("1e999", "1e999"), ("-1e999", "-1e999"), ("9" * 400 + ".5", "9" * 20)])
def test_a_number_past_any_double_is_named(doc: dict[str, Any], number: str, shown: str) -> None:
    """The message quotes the number, cut to 20 characters so a hostile one cannot flood the terminal."""
    text = seal(doc)
    cut = text.index('"data": [') + len('"data": [')
    with pytest.raises(TraceFormatError) as e:
        serialize.loads(text[:cut] + number + ", " + text[cut:], "t.json")
    assert str(e.value) == f"t.json is not a readable trace file (number {shown} is out of range)"


@pytest.mark.parametrize(
    "value", [10**400, 10**40, 1e39, -3.5e38], ids=["int-past-double", "int-past-float32", "past-float32", "below"]
)
def test_a_list_value_past_its_dtype_is_refused(doc: dict[str, Any], value: float) -> None:
    """A list holds finite values of its dtype: 1e39 would read as inf in float32, and an integer past the
    largest double (10**400) was a traceback out of numpy.  The one line is all: no numpy warning on the way."""
    d = json.loads(json.dumps(doc))
    _node(d, "x")["value"]["data"][0] = value
    with warnings.catch_warnings(), pytest.raises(TraceFormatError) as e:
        warnings.simplefilter("error")
        serialize.loads(seal(d), "t.json")
    assert str(e.value) == "t.json: malformed node 1 ('x'): a list value is too large for float32"


def test_a_number_reads_the_same_however_it_is_spelled(doc: dict[str, Any]) -> None:
    """JSON has one kind of number: 18014399583223809 and 18014399583223809.0 are one value (read as a double,
    then rounded to the node's float32), whether the file spells it, or every number of the list, as an integer."""
    read = []
    for value in (18014399583223809, 18014399583223809.0):
        d = json.loads(json.dumps(doc))
        data = _node(d, "x")["value"]["data"]
        data[:] = [value] * len(data)
        read.append(serialize.loads(seal(d)).tensor("x"))
    assert (read[0] == read[1]).all() and (read[0] == np.float32(2.0**54)).all()


def test_a_document_json_cannot_write_is_refused(doc: dict[str, Any]) -> None:
    """:func:`serialize.from_dict` may be handed a document from a laxer reader (NaN): its digest cannot be
    recomputed, so it never matches, whatever digest came with it."""
    d = json.loads(json.dumps(doc))
    d["meta"]["source"]["note"] = float("nan")
    lax = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)  # allow_nan, as a lax writer
    for digest in ("sha256:" + hashlib.sha256(lax.encode("utf-8")).hexdigest(), "sha256:" + "0" * 64):
        with pytest.raises(TraceFormatError) as e:
            serialize.from_dict({**d, "digest": digest})
        assert str(e.value) == "trace was modified after it was written (its digest does not match its content)"


def test_messages_name_what_they_read_and_what_is_wrong(tmp_path: Path, doc: dict[str, Any]) -> None:
    """Text and documents that come without a file name are called "trace"; a file is called by its name."""
    no_version = {**doc, "version": 99}
    cases: list[tuple[Callable[[], object], str]] = [
        (
            lambda: serialize.parse("{"),
            "trace is not a readable trace file "
            "(truncated: Expecting property name enclosed in double quotes at line 1)",
        ),
        (lambda: serialize.parse("[" * 100_000), "trace is not a readable trace file (nested too deeply)"),
        (lambda: serialize.from_dict([1]), 'trace is not an attn-trace trace file (no "format": "attn-trace")'),
        (
            lambda: serialize.from_dict(no_version),
            "trace has format version 99, which this attn-trace cannot read (it reads versions 1, 2, 3)",
        ),
        (lambda: serialize.from_dict(doc), "trace has no digest"),
    ]
    bad = tmp_path / "bad.json"
    bad.write_text("hello")
    cases.append(
        (
            lambda: tracer.load(bad),
            "'bad.json' is not a readable trace file (not valid JSON: Expecting value at line 1)",
        ),
    )
    inside = bad / "t.json"  # a path through a file
    cases.append((lambda: tracer.load(inside), f"cannot read '{inside}': Not a directory"))
    for call, message in cases:
        with pytest.raises(TraceFormatError) as e:
            call()
        assert str(e.value) == message


def test_deep_nesting_is_refused(tmp_path: Path, doc: dict[str, Any]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    ok = tmp_path / "ok.json"
    ok.write_text(seal(doc))
    r = CliRunner()
    for args in (
        ["explain", "omega[2,1]", "--from", str(deep)],
        ["report", "--from", str(deep), "-o", str(tmp_path / "r")],
        ["steps", "--from", str(deep)],
        ["verify", str(deep)],
        ["diff", str(ok), str(deep)],
    ):
        res = r.invoke(app, args)
        assert res.exit_code == 2 and isinstance(res.exception, SystemExit), args
        assert "nested too deeply" in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("case", ["tokens-int", "query-99", "dtype-null", "args-arity", "nodes-int"])
def test_explain_and_report_refuse_in_one_line(tmp_path: Path, doc: dict[str, Any], case: str) -> None:
    edit = next(c[1] for c in CASES if c[0] == case)
    d = json.loads(json.dumps(doc))
    edit(d)
    src = tmp_path / "evil.json"
    src.write_text(seal(d))
    for args in (
        ["explain", "omega[2,1]", "--from", str(src)],
        ["report", "--from", str(src), "-o", str(tmp_path / "r")],
    ):
        res = CliRunner().invoke(app, args)
        assert (
            res.exit_code == 2 and isinstance(res.exception, SystemExit) and "malformed trace file at $." in res.output
        )


@pytest.mark.parametrize("dropout", [5, {"p": "x", "seed": 1}, {"p": 0.5, "seed": "abc"}])
def test_metadata_a_page_reads_is_checked(tmp_path: Path, dropout: Any) -> None:
    """The causal page's code writes the dropout draw from ``meta.dropout``: a bad one was a traceback (exit 1)."""
    d = serialize.to_dict(tracer.trace_lesson("causal"))
    d["meta"]["dropout"] = dropout
    src = tmp_path / "evil.json"
    src.write_text(seal(d))
    res = CliRunner().invoke(app, ["report", "--from", str(src), "-o", str(tmp_path / "r")])
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output
    assert "malformed trace file at $.meta.dropout" in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_dev_zero_is_not_read(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["explain", "omega[2,1]", "--from", "/dev/zero"])
    assert res.exit_code == 2 and "not a regular file" in res.output
