"""Fuzzing what renders a trace: schema-valid metadata and node edits, through every command that reads a file.

The loader fuzzer (``tests/test_fuzz_loaders.py``) throws hostile JSON at
the parser; these throw *plausible* files at the renderers: metadata that
passes the schema but mixes lessons (a trainable trace that says ``lesson =
"simple"``, a multi-head one that says ``captured = true``, weights of an
unknown kind), and nodes whose op, stage, axes, references, attributes or
values were edited (with the digest recomputed, as anyone can).  ``report
--from`` (HTML and Markdown), ``explain``, ``steps``, ``verify`` and
``notebook`` must give a result (exit 0, or 1 for ``verify``) or one line of
bad input (exit 2): exit 3, the CLI's "internal error" (issue 24), or an
exception escaping the CLI fails the test.  Derandomized (seeded by the
test's name) and bounded by example counts (60 each;
``ATTN_TRACE_FUZZ_EXAMPLES`` sets more for a long run); a failing example is reported
as found, not shrunk (shrinking a run of six commands takes minutes).
"""

from __future__ import annotations

import copy
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tracer
from tests.hostile import seal
from tracer.cli import app
from tracer.core import serialize
from tracer.present import narrative

SETTINGS = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    max_examples=int(os.environ.get("ATTN_TRACE_FUZZ_EXAMPLES", "60")),
    phases=[Phase.explicit, Phase.generate],
)
LESSONS = ("simple", "trainable", "causal", "multihead")


@cache
def _docs() -> dict[str, str]:
    out = {}
    for lesson in LESSONS:
        doc = serialize.to_dict(tracer.trace_lesson(lesson))
        out[lesson] = json.dumps(doc)
    t = tracer.trace_torch(_captured)
    out["captured"] = json.dumps(serialize.to_dict(t))
    return out


def _captured() -> Any:
    import torch

    x = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]])
    keys = x.view(3, 3, 1).transpose(0, 1)
    return torch.softmax(x @ keys.reshape(3, 3), dim=-1).tril()


META_VALUES: dict[str, list[Any]] = {
    "lesson": [*LESSONS, "capture", "evil", "", "../x"],
    "captured": [True, False],
    "heads": [0, 1, 2, 3, 7],
    "weights": [{"kind": k, "seed": 1, "d_out": d} for k in ("rand", "file", "linear") for d in (1, 2, 5)] + [{}],
    "modules": [{}, {"(root)": "Linear"}, {"wrap": {"seed": 1}}, {"a": "x", "b": "y"}],
    "dropout": [{"p": 0.5, "seed": 1}, {"p": 0.0, "seed": 2}, {}],
    "overflow": [{"factor": None, "max_power": 3}, {"factor": 10, "max_power": 1}, {"factor": 1000, "max_power": 12}],
    "source": [{"kind": k} for k in ("tutorial", "file", "text", "random", "evil")] + [{"kind": "file", "name": "a.b"}],
    "stages": [[], ["inputs"], ["scores", "scores"], ["x"]],
    "narrative": [None, "en", "both"],
}


def _meta_edit(doc: dict[str, Any], key: str, value: Any) -> None:
    meta = doc["meta"]
    if key == "narrative":
        if value is None:
            meta.pop("narrative", None)
        else:
            langs = ("en",) if value == "en" else ("en", "zh")
            meta["narrative"] = {g: narrative.load("trainable", g).to_dict() for g in langs}
    else:
        meta[key] = copy.deepcopy(value)


NODE_FIELDS = ("op", "stage", "axes", "args", "attrs", "value", "text", "latex", "split", "granularity")
NODE_VALUES: list[Any] = [
    "input", "mul", "add", "acc", "sum", "max", "exp", "softmax", "matmul", "view", "stack", "write", "cast",
    "maxabsdiff", "tril", "masked_fill", "compare", "x", "", "scores", ["i"], ["i", "j"], ["i", "j", "k"], [],
    [{"node": "x", "index": ["i", "k"]}], [{"node": "x"}], [{"node": "x", "index": ["*", "k"]}],
    {"over": "j"}, {"over": "k", "partials": "x"}, {"fill": "-inf"}, {"bound": 1e-6}, {"diagonal": 1},
    {"sign": "<"}, {"func": "bool"}, [1], [2, 1], "element", "tensor", 0.5, -1.0, 1e38,
]  # fmt: skip


def _node_edit(doc: dict[str, Any], k: int, field: str, value: Any, entry: int) -> None:
    node = doc["nodes"][k % len(doc["nodes"])]
    if field == "value":
        v = node["value"]
        if v.get("encoding") == "list" and v.get("data"):
            v["data"][entry % len(v["data"])] = value if isinstance(value, float) else 9.0
        return
    node[field] = copy.deepcopy(value)


def _commands(path: Path) -> list[list[str]]:
    out = str(path.parent / "out")
    return [
        ["report", "--from", str(path), "-o", out, "--force"],
        ["report", "--from", str(path), "-o", out, "--force", "--fragment", "--format", "html", "--lang", "zh"],
        ["explain", "x[1,1]", "--from", str(path)],
        ["verify", str(path)],
        ["diff", str(path), str(path)],
    ]


def _run_all(doc: dict[str, Any], folder: Path) -> None:
    path = folder / "t.json"
    path.write_text(seal(doc), encoding="utf-8")
    for args in _commands(path):
        r = CliRunner().invoke(app, args)
        if isinstance(r.exception, SystemExit) or r.exception is None:
            allowed = (0, 1, 2) if args[0] == "verify" else (0, 2)
            assert r.exit_code in allowed, (args[0], r.exit_code, r.output[-800:])
            if r.exit_code == 2:
                assert len(r.output.strip().splitlines()) == 1, r.output
        else:  # an exception escaped the CLI
            raise AssertionError(f"{args[0]}: {type(r.exception).__name__}: {r.exception}") from r.exception


@pytest.mark.slow
@SETTINGS
@given(
    base=st.sampled_from([*sorted(LESSONS), "captured"]),
    edits=st.lists(
        st.sampled_from(sorted(META_VALUES)).flatmap(lambda k: st.tuples(st.just(k), st.sampled_from(META_VALUES[k]))),
        min_size=1,
        max_size=3,
    ),
)
def test_schema_valid_metadata_never_crashes_a_renderer(
    tmp_path_factory: Any, base: str, edits: list[tuple[str, Any]]
) -> None:
    doc = json.loads(_docs()[base])
    for key, value in edits:
        _meta_edit(doc, key, value)
    _run_all(doc, tmp_path_factory.mktemp("meta"))


@pytest.mark.slow
@SETTINGS
@given(
    base=st.sampled_from([*sorted(LESSONS), "captured"]),
    edits=st.lists(
        st.tuples(st.integers(0, 500), st.sampled_from(NODE_FIELDS), st.sampled_from(NODE_VALUES), st.integers(0, 50)),
        min_size=1,
        max_size=3,
    ),
)
def test_node_edits_never_crash_a_renderer(
    tmp_path_factory: Any, base: str, edits: list[tuple[int, str, Any, int]]
) -> None:
    doc = json.loads(_docs()[base])
    for k, field, value, entry in edits:
        _node_edit(doc, k, field, value, entry)
    _run_all(doc, tmp_path_factory.mktemp("node"))


def test_the_four_crashes_the_fuzzer_found_are_bad_input(tmp_path: Path) -> None:
    cases = [
        ("trainable", "weights", {"kind": "evil", "seed": 1, "d_out": 2}),
        ("trainable", "lesson", "simple"),
        ("multihead", "captured", True),
        ("multihead", "lesson", "simple"),
    ]
    for base, key, value in cases:
        doc = json.loads(_docs()[base])
        doc["meta"][key] = value
        path = tmp_path / "t.json"
        path.write_text(seal(doc), encoding="utf-8")
        r = CliRunner().invoke(app, ["report", "--from", str(path), "-o", str(tmp_path / "o"), "--force"])
        assert r.exit_code == 2 and "malformed trace file" in r.output, (key, value, r.output)
