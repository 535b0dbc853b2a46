"""The student's process cannot fake a verdict: it sends data, and the parent judges it.

The submissions are ``tests/check_class/forge_*.py`` and ``patch_tracer.py``;
the unit tests below feed :func:`tracer.compare.check.evidence.decode` and
the judge forged data directly.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tracer import sandbox
from tracer.cli import app
from tracer.compare.check.decode import decode
from tracer.compare.check.evidence import Malformed, encode, pack
from tracer.compare.check.gather import gather
from tracer.compare.check.run import judge, spec_for
from tracer.compare.check.student import load

from .sandbox_jobs import task

CLASS = Path(__file__).parent / "check_class"


def run(name: str, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["check", f"{CLASS / name}:CausalAttention", "--lesson", "causal", *args])
    return res.exit_code, res.stdout, res.stderr


def test_a_forged_verdict_frame_on_every_fd_is_no_verdict() -> None:
    code, out, err = run("forge_verdict.py", "--format", "json")
    assert code == 2 and out == ""
    assert "forge_verdict.py sent malformed data: it sent a verdict of its own" in err


def test_forged_data_of_the_wrong_size_is_no_verdict() -> None:
    code, out, err = run("forge_data.py")
    assert code == 2 and out == "" and "Traceback" not in err
    assert "forge_data.py sent malformed data: W_query holds 8 bytes where its shape (2, 6, 2) needs 192" in err


def test_well_formed_made_up_values_differ() -> None:
    code, out, _ = run("forge_values.py")
    assert code == 1 and "DIFFERS from the lesson" in out and "MATCHES" not in out


def test_patching_the_checker_in_the_child_changes_nothing() -> None:
    code, out, _ = run("patch_tracer.py", "--format", "json")
    assert code == 1
    assert '"ok": false' in out and '"stage": "scaling"' in out


def test_the_class_goes_on_around_the_forgers() -> None:
    res = CliRunner().invoke(
        app, ["check", f"{CLASS}/[cfp]*.py:CausalAttention", "--lesson", "causal", "-j", "2", "--timeout", "20"]
    )
    lines = dict(line.split(": ", 1) for line in res.stdout.splitlines() if ".py: " in line)
    assert res.exit_code == 1
    assert lines["correct.py"] == "match" and lines["chdir.py"] == "match" and lines["printer.py"] == "match"
    assert lines["forge_verdict.py"].startswith("no verdict: the check of")
    assert lines["forge_data.py"].startswith("no verdict: the check of")
    assert lines["forge_values.py"].startswith("differs")
    assert lines["patch_tracer.py"].startswith("differs")


@pytest.fixture(scope="module")
def honest() -> dict[str, Any]:
    """The evidence of the book's correct class, encoded as the child sends it."""
    obj, _ = load(f"{CLASS / 'correct.py'}:CausalAttention")
    return encode(gather(obj, spec_for("causal")))


def verdict(doc: dict[str, Any]) -> bool:
    return judge(decode(doc), spec_for("causal"), "correct.py").ok


def test_honest_evidence_crosses_unchanged(honest: dict[str, Any]) -> None:
    ev = decode(copy.deepcopy(honest))
    assert verdict(copy.deepcopy(honest)) is True
    assert ev.built.startswith("CausalAttention(") and set(ev.roles) == {"W_query", "W_key", "W_value"}
    main = ev.run("eval")
    assert main is not None and main.captured is not None and ev.output.shape == (2, 6, 2)
    assert [r.name for r in ev.runs] == ["eval", "train", "short"] and ev.other


def _output(doc: dict[str, Any], value: np.ndarray) -> None:
    doc["runs"][0]["output"] = encode_array(value)


def encode_array(value: np.ndarray) -> dict[str, Any]:
    return pack(value)


def test_a_claim_matches_only_with_the_right_values(honest: dict[str, Any]) -> None:
    ev = decode(copy.deepcopy(honest))
    doc = copy.deepcopy(honest)  # the right result for other weights than the ones it names
    other = ev.roles["W_query"].value * 2
    doc["roles"][0]["value"] = encode_array(other)
    assert verdict(doc) is False
    doc = copy.deepcopy(honest)  # the result nudged in one entry
    nudged = ev.output.copy()
    nudged[0, 3, 1] += 1e-3
    _output(doc, nudged)
    assert verdict(doc) is False
    doc = copy.deepcopy(honest)  # a second build that claims the right sizes but returns the first build's result
    doc["other"][0]["results"]["eval"] = encode_array(ev.output)
    assert verdict(doc) is False


BREAKS = {
    "name is not a string": lambda d: d.update(name=3),
    "output is not an object": lambda d: d["runs"][0].update(output=[1.0, 2.0]),
    "output's data is not base64": lambda d: d["runs"][0]["output"].update(f8="!!!!"),
    "more than a check's tensors can have": lambda d: d["runs"][0]["output"].update(shape=[4096, 4096]),
    "shape": lambda d: d["runs"][0]["output"].update(shape=[2, -6, 2]),
    "has non-finite entries": lambda d: d["roles"][0].update(value=encode_array(np.full((3, 2), np.nan))),
    "not a role of the check": lambda d: d["roles"][0].update(role="W_evil"),
    "is not a list": lambda d: d["runs"][0].update(seen={"id": "x"}),
    "is not a string": lambda d: d["runs"][0]["seen"][0].update(id=7),
    "is not true or false": lambda d: d.update(square="yes"),
    "the run 'train' is missing": lambda d: d.update(runs=[r for r in d["runs"] if r["name"] != "train"]),
    "runs has 17 entries": lambda d: d.update(runs=(d["runs"] * 6)[:17]),
    "the second build is missing": lambda d: d.update(other=None),
    "1 second builds were expected, got 2": lambda d: d.update(other=d["other"] * 2),
    "other is not a list": lambda d: d.update(other=d["other"][0]),
    "name no query, key and value": lambda d: d.update(roles=d["roles"][:1]),
    "do not fit the lesson's inputs": lambda d: d["roles"][1].update(value=encode_array(np.ones((5, 2)))),
    "the captured run": lambda d: d["runs"][0].update(captured='{"format": "attn-trace"}'),
    "is not one the check knows": lambda d: d.update(structural=["all_good", {}]),
    "'sizes_ignored' is not one the check knows": lambda d: d.update(structural=["sizes_ignored", {}]),
    "characters long": lambda d: d.update(name="x" * 100_000),
}


@pytest.mark.parametrize("why", list(BREAKS))
def test_malformed_evidence_is_refused(honest: dict[str, Any], why: str) -> None:
    doc = copy.deepcopy(honest)
    BREAKS[why](doc)
    with pytest.raises(Malformed, match=why.replace("(", r"\(").replace(")", r"\)")):
        verdict(doc)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="Linux's /proc")
def test_a_child_holds_only_its_own_pipes_and_cannot_be_traced() -> None:
    got = dict(sandbox.pool([task("sleeps"), task("fifos")], 2, 30, 0))
    assert got[0].verdict == {"kind": "data"}
    report = got[1].verdict
    assert report is not None
    assert len(report["pipes"]) == 2  # its output pipe (fds 1 and 2) and its own verdict pipe, nobody else's
    assert report["dumpable"] == 0
