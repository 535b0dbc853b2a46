"""A JSON object with a key twice is refused in one line, not read as its last value (trace, inputs, points)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tracer.cli import app


def _doubled(text: str, key: str, value: object) -> str:
    """``text`` (a JSON object) with ``key`` written once more, first."""
    return "{" + json.dumps(key) + ": " + json.dumps(value) + ", " + text.lstrip()[1:]


def test_a_trace_file_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "t.json"
    assert CliRunner().invoke(app, ["trace", "-o", str(good)]).exit_code == 0
    bad = tmp_path / "bad.json"
    bad.write_text(_doubled(good.read_text(), "meta", {}))
    for command in (["verify", str(bad)], ["explain", "--from", str(bad), "z[2]"]):
        res = CliRunner().invoke(app, command)
        assert res.exit_code == 2 and "the key 'meta' appears twice" in res.stderr, res.output
        assert res.stderr.count("\n") == 1


def test_an_inputs_file_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    inputs = tmp_path / "in.json"
    inputs.write_text('{"x": [[1, 2, 3], [4, 5, 6]], "x": [[0, 0, 0], [0, 0, 0]]}')
    res = CliRunner().invoke(app, ["trace", "--inputs", str(inputs), "-o", str(tmp_path / "t.json")])
    assert res.exit_code == 2 and "the key 'x' appears twice" in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "t.json").exists()
