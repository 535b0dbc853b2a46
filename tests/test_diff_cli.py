"""attn-trace diff: exit codes, output formats, bad files, and no torch import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer.cli as cli
from tracer.compare import differ
from tracer.core.serialize import _digest

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.app, ["diff", *args])
    # CliRunner never prints a traceback: a crash shows as an exception other than SystemExit
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def test_equal_exit_0(trace_files: dict[str, str]) -> None:
    code, out, _ = run(trace_files["a"], trace_files["same"])
    assert code == 0
    assert "EQUAL within tolerance" in out


def test_changed_input_exit_1_with_one_root(trace_files: dict[str, str]) -> None:
    code, out, err = run(trace_files["a"], trace_files["b"], "--limit", "3")
    assert code == 1, err
    assert "1 root cause" in out
    roots = out.split("root causes (1)")[1].split("differing steps")[0]
    assert "* x[1,1]" in roots and "0.430000007" in roots and "0.529999971" in roots
    assert "differing steps (first 3 of" in out
    for stage in ("inputs", "scores", "normalize", "context", "matrix", "total"):
        assert f"\n  {stage} " in out


def test_json_format(trace_files: dict[str, str]) -> None:
    code, out, _ = run(trace_files["a"], trace_files["b"], "--format", "json", "--limit", "2")
    assert code == 1
    doc = json.loads(out)
    assert set(doc) == {
        "schema", "schema_version", "equal", "a", "b", "tolerance", "limit",
        "summary", "stages", "meta", "nodes", "roots", "steps",
    }  # fmt: skip
    assert (doc["schema"], doc["schema_version"], doc["equal"]) == ("attn-trace-diff", 1, False)
    assert doc["tolerance"] == {"rtol": differ.DEFAULT_RTOL, "atol": differ.DEFAULT_ATOL}
    assert doc["summary"]["roots"] == 1 and len(doc["steps"]) == 2
    assert set(doc["summary"]) >= {"compared", "differing", "only_a", "only_b", "roots", "max_abs_diff"}
    root = doc["roots"][0]
    assert set(root) == {"id", "node", "stage", "op", "kind", "formula", "a", "b", "abs_diff", "tol", "root", "where"}
    assert (root["id"], root["kind"], root["root"]) == ("x[1,1]", "value", True)
    assert [s["stage"] for s in doc["stages"]] == ["inputs", "scores", "normalize", "context", "matrix"]


def test_tolerance_options(trace_files: dict[str, str]) -> None:
    code, out, _ = run(trace_files["a"], trace_files["b"], "--atol", "1", "--format", "json")
    assert json.loads(out)["summary"]["differing"] == 0
    assert code == 1  # the inputs still differ as metadata (source)
    assert run(trace_files["a"], trace_files["b"], "--rtol", "-1")[0] == 2


def test_cli_defaults_match_the_api() -> None:
    params = {p.name: p.default for p in cli.app.commands["diff"].params}
    assert params["rtol"] == differ.DEFAULT_RTOL
    assert params["atol"] == differ.DEFAULT_ATOL
    assert params["limit"] == differ.DEFAULT_LIMIT


def _doc(path: str) -> dict[str, object]:
    doc: dict[str, object] = json.loads(Path(path).read_text("utf-8"))
    return doc


def _bad_files(folder: Path, good: str) -> dict[str, Path]:
    text = Path(good).read_text("utf-8")
    files = {"truncated": text[: len(text) // 2]}
    doc = _doc(good)
    doc["nodes"][0]["value"]["data"][0] = 0.44  # type: ignore[index]
    files["tampered"] = json.dumps(doc)
    files["version"] = json.dumps({**_doc(good), "version": 99})
    files["no_version"] = json.dumps({k: v for k, v in _doc(good).items() if k != "version"})
    broken = {**_doc(good), "nodes": [1]}
    del broken["digest"]
    broken["digest"] = _digest(broken)
    files["malformed"] = json.dumps(broken)  # a valid digest over nonsense: the schema check names it
    out = {}
    for name, content in files.items():
        out[name] = folder / f"{name}.json"
        out[name].write_text(content, "utf-8")
    return out


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("truncated", "truncated"),
        ("tampered", "modified after it was written"),
        ("version", "format version 99"),
        ("no_version", "no format version"),
        ("malformed", "malformed trace file at $.nodes[0]"),
        ("directory", "is a directory"),
        ("missing", "no such trace file"),
    ],
)
@pytest.mark.parametrize("side", ["a", "b"])
def test_trouble_is_exit_2(tmp_path: Path, trace_files: dict[str, str], case: str, message: str, side: str) -> None:
    bad = {**_bad_files(tmp_path, trace_files["a"]), "directory": tmp_path, "missing": tmp_path / "nope.json"}[case]
    args = (str(bad), trace_files["a"]) if side == "a" else (trace_files["a"], str(bad))
    code, out, err = run(*args)
    assert code == 2
    assert out == ""
    assert message in err
    assert err.strip().count("\n") == 0


def test_cli_diff_imports_no_torch(trace_files: dict[str, str]) -> None:
    code = (
        "import sys, tracer, tracer.compare.differ, tracer.testing, tracer.pytest_plugin, tracer.compare.diffreport\n"
        "tracer.diff\n"
        "from click.testing import CliRunner\n"
        "import tracer.cli as cli\n"
        f"r = CliRunner().invoke(cli.app, ['diff', {trace_files['a']!r}, {trace_files['b']!r}])\n"
        "assert r.exit_code == 1, r.output\n"
        "heavy = sorted(m for m in ('torch', 'matplotlib', 'jinja2') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    assert done.stdout.strip() == ""
