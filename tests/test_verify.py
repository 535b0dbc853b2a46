"""Trace.verify and `attn-trace verify`: every value recomputed from its recorded operands.

The digest only catches accidents; an edited value with a recomputed digest
loads, and explain, report and diff say once which values do not follow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import tracer
from tests import tinymodels as tm
from tests.hostile import seal
from tracer.cli import app
from tracer.core import serialize
from tracer.record import registry


@pytest.mark.parametrize("lesson", registry.names())
def test_every_lesson_follows_from_its_inputs_and_every_node_is_checked(lesson: str) -> None:
    result = tm.lesson_trace(lesson).verify()
    assert result.ok and result.summary() == "" and result.checked > 20
    assert result.unchecked == ()  # head splits and joins recomputed, matrix forms held to their loop forms


@pytest.mark.parametrize(
    ("lesson", "node"),
    [("multihead", "split.hq"), ("multihead", "split.concat"), ("multihead", "wrap.concat"), ("gqa", "kh")],
)
def test_an_edit_of_a_head_split_or_join_is_named_there(lesson: str, node: str) -> None:
    doc = serialize.to_dict(tracer.trace_lesson(lesson))
    spec = next(n for n in doc["nodes"] if n["name"] == node)
    assert spec["value"]["encoding"] == "list"
    spec["value"]["data"][1] += 0.25
    result = serialize.loads(seal(doc)).verify()
    assert result.wrong[0].node == node, result.summary()


def test_a_matrix_form_is_held_to_its_loop_form_within_its_checks_bound() -> None:
    trace = tracer.trace_lesson("simple")
    bound = next(n for n in trace.nodes if n.name == "check.omega").attrs["bound"]
    for by, flagged in ((bound / 2, False), (bound * 4, True)):
        doc = serialize.to_dict(trace)
        spec = next(n for n in doc["nodes"] if n["name"] == "mat.omega")
        spec["value"]["data"][6] += by  # mat.omega[2,1]
        result = serialize.loads(seal(doc)).verify()
        assert ("mat.omega[2,1]" in result.by_id) is flagged, result.summary()


def test_overflow_and_float64_follow() -> None:
    x = np.random.default_rng(0).normal(size=(8, 4)) * 30  # naive exp overflows to inf
    for dtype in ("float32", "float64"):
        t = tracer.trace_self_attention(x, None, dtype=dtype)
        assert t.nonfinite() and t.verify().ok


def _edited(edit: dict[str, dict[int, float]], lesson: str = "simple") -> dict[str, Any]:
    doc = serialize.to_dict(tracer.trace_lesson(lesson))
    for node in doc["nodes"]:
        for pos, value in edit.get(node["name"], {}).items():
            assert node["value"]["encoding"] == "list"
            node["value"]["data"][pos] = value
    return doc


def test_an_edited_score_is_named_with_what_was_computed_from_it() -> None:
    t = serialize.loads(seal(_edited({"omega": {6: 5.0}})))  # omega[2,1] of the 6 x 6 scores
    result = t.verify()
    assert not result.ok
    assert result.wrong[0].node == "omega" and result.wrong[0].ids == ("omega[2,1]",)
    assert "omega[2,1]" in result.summary() and "naive.exp[2,1]" in result.summary()
    assert "torch.alpha[2,1]" in result.by_id


@pytest.mark.parametrize(
    ("node", "pos", "value"),
    [("omega.p", 0, 0.5), ("omega.s", 1, 0.5), ("naive.exp", 0, 2.0), ("torch.alpha", 0, 0.5), ("stable.max", 0, 9)],
)
def test_each_kind_of_op_is_checked(node: str, pos: int, value: float) -> None:
    result = serialize.loads(seal(_edited({node: {pos: value}}))).verify()
    assert result.wrong[0].node == node


def test_exp_agrees_to_a_few_ulps_but_not_more() -> None:
    doc = _edited({})
    exp = next(n for n in doc["nodes"] if n["name"] == "naive.exp")
    v = np.float32(exp["value"]["data"][0])
    exp["value"]["data"][0] = float(np.nextafter(v, np.float32(np.inf)))  # one ulp: a kernel could give it
    wrong = {w.node for w in serialize.loads(seal(doc)).verify().wrong}
    assert "naive.exp" not in wrong and "naive.sum.s" in wrong  # the sums were computed from the other value
    exp["value"]["data"][0] = float(v * np.float32(1.001))
    assert serialize.loads(seal(doc)).verify().wrong[0].node == "naive.exp"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    ok, bad = tmp_path / "ok.json", tmp_path / "edited.json"
    ok.write_text(seal(_edited({})), encoding="utf-8")
    bad.write_text(seal(_edited({"omega": {6: 5.0}})), encoding="utf-8")
    return {"ok": ok, "bad": bad}


def test_verify_command_exit_codes(files: dict[str, Path], tmp_path: Path) -> None:
    r = CliRunner()
    good = r.invoke(app, ["verify", str(files["ok"])])
    assert good.exit_code == 0 and "follow from their inputs" in good.output
    bad = r.invoke(app, ["verify", str(files["bad"])])
    assert bad.exit_code == 1 and "omega[2,1]" in bad.output and "do not follow" in bad.output
    torn = tmp_path / "torn.json"
    torn.write_text(files["ok"].read_text()[:100])
    for path in (torn, tmp_path / "missing.json"):
        res = r.invoke(app, ["verify", str(path)])
        assert res.exit_code == 2 and isinstance(res.exception, SystemExit)


def test_explain_says_plainly_that_an_edited_value_does_not_follow(files: dict[str, Path]) -> None:
    res = CliRunner().invoke(app, ["explain", "omega[2,1]", "--from", str(files["bad"])])
    assert res.exit_code == 0
    assert "= 5.0000" in res.stdout  # shown, not hidden
    assert "their exact values add up" not in res.output
    assert "does not follow from its inputs" in " ".join(res.stdout.split())  # a line may break in it
    assert res.stderr.count("do not follow from their inputs") == 1 and "omega[2,1]" in res.stderr
    clean = CliRunner().invoke(app, ["explain", "omega[2,1]", "--from", str(files["ok"])])
    assert clean.exit_code == 0 and clean.stderr == "" and "not follow" not in clean.stdout


def test_report_and_diff_name_the_edited_values_once(files: dict[str, Path], tmp_path: Path) -> None:
    r = CliRunner()
    rep = r.invoke(app, ["report", "--from", str(files["bad"]), "-o", str(tmp_path / "r"), "--format", "md"])
    assert rep.exit_code == 0 and rep.stderr.count("do not follow") == 1 and "omega[2,1]" in rep.stderr
    d = r.invoke(app, ["diff", str(files["ok"]), str(files["bad"])])
    assert d.exit_code == 1 and d.stderr.count("do not follow") == 1
    assert "edited.json" in d.stderr and "'ok.json':" not in d.stderr
    same = r.invoke(app, ["diff", str(files["ok"]), str(files["ok"])])
    assert same.exit_code == 0 and same.stderr == ""
    assert json.loads(r.invoke(app, ["diff", str(files["ok"]), str(files["bad"]), "--format", "json"]).stdout)


def test_the_report_names_edited_values_and_makes_no_rounding_claim_for_them(
    files: dict[str, Path], tmp_path: Path
) -> None:
    r = CliRunner()
    assert (
        r.invoke(app, ["report", "--from", str(files["bad"]), "-o", str(tmp_path / "bad"), "--format", "md"]).exit_code
        == 0
    )
    assert (
        r.invoke(app, ["report", "--from", str(files["ok"]), "-o", str(tmp_path / "ok"), "--format", "md"]).exit_code
        == 0
    )
    bad = (tmp_path / "bad" / "index.md").read_text(encoding="utf-8")
    ok = (tmp_path / "ok" / "index.md").read_text(encoding="utf-8")
    assert bad.count("Not following from their inputs") == 1 and "omega\\[2,1\\]" in bad
    assert "Not following" not in ok
    at = bad.index(r"\omega_{21} &= x^{(2)}")
    assert "5.0000" in bad[at : at + 200] and "unrounded" not in bad[at : at + 400]


def test_bounded_checks_follow_on_the_trace_a_page_prints_but_not_past_their_bound() -> None:
    """Pages print library results as loop forms; their bounded checks still follow, unless the bound breaks."""
    import dataclasses

    import numpy as np

    from tracer.core import portable
    from tracer.core.trace import Trace

    t = tracer.trace_lesson("simple")
    assert portable.shown(t).verify().ok
    node = t.node("check.omega")
    bound = portable.bound(node)
    assert bound is not None
    broken = [
        dataclasses.replace(n, value=np.array(10 * bound, dtype=n.value.dtype)) if n is node else n for n in t.nodes
    ]
    result = Trace(broken, t.meta).verify()
    assert [w.node for w in result.wrong] == ["check.omega"]
