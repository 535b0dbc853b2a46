"""Partial credit: one Gradescope test per stage, points from ``--points``, a CSV column per stage, the autograder."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app

HERE = Path(__file__).parent
CLASS = HERE / "check_class"
EXAMPLE = HERE.parent / "examples" / "gradescope"


def grade(path: Path, *more: str) -> tuple[int, dict[str, object], str]:
    args = ["check", f"{path}:CausalAttention", "--lesson", "causal", "--format", "gradescope", *more]
    res = CliRunner().invoke(app, args)
    return res.exit_code, (json.loads(res.stdout) if res.stdout else {}), res.stderr


def test_stages_before_the_first_divergence_earn_their_points_and_the_rest_say_why() -> None:
    code, doc, _ = grade(CLASS / "buggy_mask_zero.py", "--points", str(EXAMPLE / "points.json"))
    assert code == 1
    tests = {str(t["name"]).split(". ", 1)[1]: t for t in doc["tests"]}  # type: ignore[attr-defined]
    assert list(tests) == ["projections", "scores", "mask", "scaling", "weights", "dropout", "context"]
    assert tests["projections"]["score"] == tests["projections"]["max_score"] == 2
    assert tests["scores"]["score"] == 2 and tests["mask"]["score"] == 0 and tests["mask"]["max_score"] == 3
    assert "first divergence at buggy_mask_zero.py:21" in tests["mask"]["output"]
    for later in ("scaling", "weights", "dropout", "context"):
        assert (
            tests[later]["score"] == 0 and "not credited" in tests[later]["output"] and "mask" in tests[later]["output"]
        )
    assert doc["score"] == 4 and doc["stdout_visibility"] == "hidden"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"stages": {"mask": NaN}}', "stages.mask must be a number from 0 to 1000"),
        ('{"default": 1e300}', "default must be a number from 0 to 1000"),
        ('{"default": true}', "default must be a number"),
        ('{"stages": {"mask": -1}}', "stages.mask must be a number"),
        ('{"visibility": "everyone"}', "visibility must be one of hidden, after_due_date"),
        ('{"default": 1, "default": 2}', "the key 'default' appears twice"),
        ('{"point": 1}', "unknown key 'point'"),
        ("[1, 2]", "give a JSON object"),
        ('{"stages": [1]}', "stages must map"),
        ('{"stages": {"scroes": 2}}', "the lesson has no stage 'scroes' (its stages: projections, scores, mask"),
        ('{"stages": {"heads": 2}}', "no stage 'heads'"),  # multihead's, not causal's
    ],
)
def test_a_points_file_is_checked_before_any_submission_runs(
    tmp_path: Path, text: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracer import sandbox

    monkeypatch.setattr(sandbox, "pool", lambda *a, **k: pytest.fail("a submission ran"))
    points = tmp_path / "points.json"
    points.write_text(text)
    code, _, err = grade(CLASS / "correct.py", "--points", str(points))
    assert code == 2 and said in err and err.count("\n") == 1


def test_the_csv_has_a_column_per_stage(tmp_path: Path) -> None:
    for name in ("correct.py", "buggy_mask_zero.py"):
        shutil.copy(CLASS / name, tmp_path / name)
    res = CliRunner().invoke(app, ["check", f"{tmp_path}:CausalAttention", "--lesson", "causal", "--format", "csv"])
    rows = {r["file"]: r for r in csv.DictReader(io.StringIO(res.stdout))}
    assert res.exit_code == 1
    assert [rows["correct.py"][f"stage:{s}"] for s in ("projections", "mask", "context")] == ["1", "1", "1"]
    assert [rows["buggy_mask_zero.py"][f"stage:{s}"] for s in ("scores", "mask", "context")] == ["1", "0", "0"]


def _autograder(root: Path, submission: Path | None) -> dict[str, object]:
    """Run ``examples/gradescope/run_autograder`` against a fake ``/autograder`` tree under ``root``."""
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    shutil.copy(EXAMPLE / "points.json", root / "source" / "points.json")
    if submission is not None:
        shutil.copy(submission, root / "submission" / "attention.py")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), ATTN_TRACE=str(Path(sys.executable).parent / "attn-trace"))
    done = subprocess.run([str(EXAMPLE / "run_autograder")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text())


@pytest.mark.skipif(
    shutil.which("bash") is None or not (Path(sys.executable).parent / "attn-trace").exists(),
    reason="bash and the attn-trace script",
)
def test_the_autograder_layout(tmp_path: Path) -> None:
    right = _autograder(tmp_path / "right", CLASS / "correct.py")
    assert right["score"] == 12 and all(t["status"] == "passed" for t in right["tests"])  # type: ignore[attr-defined]
    wrong = _autograder(tmp_path / "wrong", CLASS / "buggy_mask_zero.py")
    assert wrong["score"] == 4
    missing = _autograder(tmp_path / "missing", None)
    assert missing["score"] == 0 and "no such file" in str(missing["output"])
