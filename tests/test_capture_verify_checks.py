"""A captured trace's checks (``check.N``: torch's result against its left-to-right sums) are recomputed too.

A captured product's check reads its running sums ``N.s``, one axis longer
than ``N``: ``verify`` takes their totals (the last sum along the summed
axis) and recomputes the largest gap, so no ``check.*`` is left "not
recomputed", and a check whose recorded value was edited past its bound is
named, by ``Trace.verify`` and by ``attn-trace verify`` (exit 1).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tracer
from tests import book_attention as book
from tests import capture_corpus as corpus
from tests.hostile import seal
from tracer.cli import app
from tracer.core import serialize


@pytest.mark.parametrize(("module", "runner"), [(book, "mha"), (book, "v2"), (corpus, "fused"), (corpus, "mha_masks")])
def test_a_fresh_capture_leaves_no_check_unrecomputed(module: object, runner: str) -> None:
    t = tracer.trace_torch(getattr(module, runner))
    result = t.verify()
    assert result.ok, result.summary()
    checks = [n.name for n in t.nodes if n.name.startswith("check.")]
    assert checks and not [n for n in result.unchecked if n.startswith("check.")], result.unchecked


@pytest.mark.parametrize("check", ["check.queries", "check.attn_scores", "check.out_proj"])
def test_an_edited_check_is_named_by_verify_and_the_command_exits_1(tmp_path, check: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "mha.json"
    res = CliRunner().invoke(app, ["trace", "--torch", "tests/book_attention.py:mha", "-o", str(path)])
    assert res.exit_code == 0, res.output
    assert CliRunner().invoke(app, ["verify", str(path)]).exit_code == 0  # fresh: clean
    doc = json.loads(path.read_text())
    spec = next(n for n in doc["nodes"] if n["name"] == check)
    assert float(spec["value"]["data"][0]) <= spec["attrs"]["bound"]
    spec["value"]["data"][0] = 0.5  # far past the bound the maths gives that gap
    path.write_text(seal(doc))
    res = CliRunner().invoke(app, ["verify", str(path)])
    assert res.exit_code == 1 and check in res.output, res.output
    result = serialize.loads(path.read_text()).verify()
    assert [w.node for w in result.wrong] == [check], result.summary()
