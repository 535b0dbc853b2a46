"""A trace file with a valid digest and a wrong structure is refused on load, by the JSON path of its first fault."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
