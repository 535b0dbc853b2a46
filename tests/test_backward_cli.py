"""``--backward`` and ``--grad-output`` on the command line: trace, verify, steps, explain, and bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.hostile import seal
from tracer.cli import app


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_trace_verify_steps_explain(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    code, _, err = run("trace", "--lesson", "causal", "--backward", "-o", str(out))
    assert code == 0, err
    assert json.loads(out.read_text())["meta"]["backward"]["upstream"] == "ddropout.z"
    code, said, _ = run("verify", str(out))
    assert code == 0 and "follow from their inputs" in said
    code, said, _ = run("steps", "--from", str(out), "domega[1]")
    assert code == 0 and said.splitlines()[1] == "domega[1,2]\t0.0000"
    code, said, _ = run("explain", "--lesson", "simple", "--backward", "domega[2,1]")
    assert code == 0
    assert said.startswith("domega[2,1] = alpha[2,1]·(dalpha[2,1] − Σ_k alpha[2,k]·dalpha[2,k])")
    code, said, _ = run("explain", "--from", str(out), "domega[1,2]")
    assert "masked: mask 1" in said


def test_an_edited_gradient_is_caught(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    run("trace", "--lesson", "trainable", "--backward", "-o", str(out))
    doc = json.loads(out.read_text())
    node = next(n for n in doc["nodes"] if n["name"] == "dscaled.dot")
    data = node["value"]["data"]
    data[1] = data[1] * 1.5 + 0.25  # an edit with the digest made again: only recomputing finds it
    out.write_text(seal(doc))
    code, said, _ = run("verify", str(out))
    assert code == 1 and "dscaled.dot[2]" in said


def test_grad_output_file(tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    g.write_text(json.dumps([[0.5, -1.0]] * 6))
    code, said, _ = run("steps", "--lesson", "trainable", "--grad-output", str(g), "dz[6]")
    assert code == 0 and said == "dz[6,1]\t0.5\ndz[6,2]\t-1.0\n"


def test_bad_grad_output_files_are_one_line_errors(tmp_path: Path) -> None:
    cases = {
        "shape.json": json.dumps([[1.0, 2.0]] * 2),
        "text.json": json.dumps([["a", 1.0]] * 6),
        "nan.csv": "1,nan\n" * 6,
        "bad.json": "{not json",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    for name in [*cases, "missing.json"]:
        code, said, err = run("trace", "--lesson", "trainable", "--grad-output", str(tmp_path / name))
        assert code == 2, name
        assert said == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (name, err)


def test_backward_refused_where_it_does_not_apply(tmp_path: Path) -> None:
    code, _, err = run("trace", "--lesson", "model", "--backward")
    assert code == 2 and "no backward pass yet" in err
    saved = tmp_path / "s.json"
    run("trace", "-o", str(saved))
    code, _, err = run("steps", "--from", str(saved), "--backward", "dz")
    assert code == 2 and "--from reads a saved trace" in err


def test_diff_of_two_upstream_gradients_names_the_input(tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    g.write_text(json.dumps([[0.5, -1.0]] * 6))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    run("trace", "--lesson", "trainable", "--backward", "-o", str(a))
    run("trace", "--lesson", "trainable", "--grad-output", str(g), "-o", str(b))
    code, said, _ = run("diff", str(a), str(b))
    assert code == 1
    assert "another backward" in said and "inputs.dz" in said
    assert "* dz[1,1]" in said and "dinputs" in said  # the upstream gradient is the root cause


def test_verify_backward(tmp_path: Path) -> None:
    both, plain = tmp_path / "b.json", tmp_path / "p.json"
    run("trace", "--lesson", "trainable", "--backward", "-o", str(both))
    run("trace", "--lesson", "trainable", "-o", str(plain))
    code, said, _ = run("verify", "--backward", str(both))
    assert code == 0 and said.endswith(
        "all 76 recomputed nodes follow from their inputs (38 of them the backward pass's)\n"
    )
    code, said, err = run("verify", "--backward", str(plain))
    assert code == 2 and said == "" and "holds no backward pass" in err


def edited(path: Path, change: Any) -> dict[str, Any]:
    """The trace file at ``path`` with ``change`` applied to its document, its digest made again."""
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(seal(doc))
    return doc


def test_meta_backward_is_checked_when_the_file_is_read(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    run("trace", "--lesson", "causal", "--backward", "-o", str(good))
    fresh = good.read_text()
    code, said, err = run("verify", "--backward", str(good))
    assert code == 0, err
    upstream = next(n for n in json.loads(fresh)["nodes"] if n["name"] == "ddropout.z")

    def meta(key: str, value: Any) -> Any:
        return lambda doc: doc["meta"]["backward"].__setitem__(key, value)

    def node(name: str, key: str, value: Any) -> Any:
        return lambda doc: next(n for n in doc["nodes"] if n["name"] == name).__setitem__(key, value)

    cases = {
        "stages: 7 is not of type 'array'": meta("stages", 7),
        "backward.loss: 'cubic' is not one of": meta("loss", "cubic"),
        "backward.output: 'nothing' is not a node of this trace": meta("output", "nothing"),
        "backward.gradients[1]: 'dW_nothing' is not a node": meta("gradients", ["dx", "dW_nothing"]),
        "backward.upstream: 'dv' is computed (sum); the upstream gradient is an input": meta("upstream", "dv"),
        "backward.upstream: 'ddropout.z' has axes ['i', 'k']": node("ddropout.z", "axes", ["i", "k"]),
        "backward.stages[2]: no node is in stage 'dmagic'": meta("stages", ["dcontext", "ddropout", "dmagic"]),
        "'extra' was unexpected": meta("extra", 1),
        "'upstream' is a required property": lambda doc: doc["meta"]["backward"].pop("upstream"),
    }
    for i, (want, change) in enumerate(cases.items()):
        bad = tmp_path / f"bad{i}.json"
        bad.write_text(fresh)
        edited(bad, change)
        for command in (("verify", "--backward"), ("explain", "--from"), ("report", "--from")):
            code, said, err = run(*command, str(bad), *(["domega[2,1]"] if command[0] == "explain" else []))
            assert code == 2 and said == "", (want, command)
            assert len(err.strip().splitlines()) == 1 and want in err, (want, err)
    assert upstream["op"] == "input"


def test_a_three_axis_grad_output_file_for_gqa(tmp_path: Path) -> None:
    g = tmp_path / "g.json"
    g.write_text(json.dumps([[[0.5, 1.0] + [0.0] * 6] * 6] * 2))
    code, said, _ = run("steps", "--lesson", "gqa", "--grad-output", str(g), "dout[2,6,2]")
    assert code == 0 and said == "dout[2,6,2]\t1.0\n"
    code, _, err = run("trace", "--lesson", "trainable", "--grad-output", str(g))
    assert code == 2 and "has shape 2 x 6 x 8; the output z has shape 6 x 2" in err
