"""Hostile inputs, weights and pipelines: one line, exit 2, never a traceback, never an allocation past the limits."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner, Result

from tracer.cli import app


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def refused(res: Result, *words: str) -> None:
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit), res.exception  # a clean exit, not an escaped exception
    assert len(res.output.strip().splitlines()) == 1, res.output
    for w in words:
        assert w in res.output, res.output


@pytest.mark.parametrize("digits", [400, 5000])
def test_huge_integers_in_json_inputs_and_weights(tmp_path: Path, digits: int) -> None:
    big = "9" * digits
    (tmp_path / "x.json").write_text(f"[[{big}, 1], [2, 3]]")
    refused(run("steps", "--inputs", str(tmp_path / "x.json")), "too large")
    w = "{" + ", ".join(f'"{n}": [[{big}, 1], [1, 1]]' for n in ("W_query", "W_key", "W_value")) + "}"
    (tmp_path / "w.json").write_text(w)
    (tmp_path / "in.json").write_text("[[1, 2], [3, 4]]")
    refused(
        run(
            "steps",
            "--lesson",
            "trainable",
            "--inputs",
            str(tmp_path / "in.json"),
            "--weights",
            str(tmp_path / "w.json"),
        )
    )


def test_deep_json_inputs(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    refused(run("steps", "--inputs", str(tmp_path / "deep.json")), "nested too deeply")


@pytest.mark.parametrize("content", ["null", '{"inputs": null}'])
def test_null_inputs_never_mean_the_tutorial(tmp_path: Path, content: str) -> None:
    (tmp_path / "n.json").write_text(content)
    refused(run("steps", "--inputs", str(tmp_path / "n.json")))
    torch.save({"inputs": None}, tmp_path / "n.pt")
    refused(run("steps", "--inputs", str(tmp_path / "n.pt")), "null")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_tensors_are_converted_and_said(tmp_path: Path, dtype: torch.dtype) -> None:
    torch.save(torch.tensor([[0.5, 0.25], [1.0, 2.0]], dtype=dtype), tmp_path / "h.pt")
    res = run("steps", "x", "--inputs", str(tmp_path / "h.pt"))
    assert res.exit_code == 0, res.output
    assert f"holds {str(dtype).removeprefix('torch.')}: converted exactly" in res.stderr
    assert "x[1,2]\t0.25" in res.stdout


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
def test_sparse_quantized_meta_and_complex_tensors_are_refused(tmp_path: Path) -> None:
    dense = torch.tensor([[0.5, 0.25], [1.0, 2.0]])
    cases = {
        "sparse": (dense.to_sparse(), "sparse"),
        "quantized": (torch.quantize_per_tensor(dense, 0.1, 0, torch.qint8), "quantized"),
        "meta": (torch.empty(2, 2, device="meta"), "meta tensor"),
        "complex": (dense.to(torch.complex64), "complex"),
    }
    for name, (t, word) in cases.items():
        torch.save(t, tmp_path / f"{name}.pt")
        refused(run("steps", "--inputs", str(tmp_path / f"{name}.pt")), word)


@pytest.mark.parametrize("seed", [str(1 << 64), str(-(1 << 63) - 1), "99999999999999999999999999"])
def test_seeds_outside_the_generator_s_range(seed: str) -> None:
    refused(run("steps", "--text", "a b", "--seed", seed), "--seed")


def test_edge_seeds_work() -> None:
    for seed in (str((1 << 64) - 1), str(-(1 << 63))):
        assert run("steps", "x", "--text", "a b", "--seed", seed).exit_code == 0


def test_weights_are_as_strict_as_inputs(tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text("[[1, 2], [3, 4]]")
    base = ["steps", "--lesson", "trainable", "--inputs", str(tmp_path / "in.json"), "--weights"]
    bools = {n: [[True, False], [False, True]] for n in ("W_query", "W_key", "W_value")}
    (tmp_path / "b.json").write_text(json.dumps(bools))
    refused(run(*base, str(tmp_path / "b.json")), "real numbers")
    huge = {n: [[1e308, 1.0], [1.0, 1.0]] for n in ("W_query", "W_key", "W_value")}
    (tmp_path / "h.json").write_text(json.dumps(huge))
    refused(run(*base, str(tmp_path / "h.json")), "not finite in float32")
    np.savez(tmp_path / "c.npz", **{n: np.array([[1 + 2j, 1], [1, 1]]) for n in ("W_query", "W_key", "W_value")})
    refused(run(*base, str(tmp_path / "c.npz")), "real numbers")


def test_csv_header_is_only_a_row_above_numbers(tmp_path: Path) -> None:
    (tmp_path / "semi.csv").write_text("1;2\n3;4\n")
    refused(run("steps", "--inputs", str(tmp_path / "semi.csv")), "line 1, column 1", "'1;2'")
    (tmp_path / "head.csv").write_text("a,b\n1,2\n3,4\n")
    res = run("steps", "x[2,1]", "--inputs", str(tmp_path / "head.csv"))
    assert res.exit_code == 0 and "x[2,1]\t3" in res.stdout


def test_devices_and_oversized_files_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    refused(run("steps", "--inputs", str(tmp_path / "zero.json")), "not a regular file")
    (tmp_path / "w.npz").symlink_to("/dev/zero")
    refused(run("steps", "--lesson", "trainable", "--weights", str(tmp_path / "w.npz")), "not a regular file")
    big = tmp_path / "big.csv"
    with big.open("wb") as f:
        f.truncate((64 << 20) + 1)  # sparse: no disk used
    refused(run("steps", "--inputs", str(big)), "byte limit")


def test_npy_header_shape_is_checked_before_reading(tmp_path: Path) -> None:
    from numpy.lib import format as npf

    path = tmp_path / "huge.npy"
    with path.open("wb") as f:
        npf.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (10**11, 2)})
    refused(run("steps", "--inputs", str(path)), "past the limits")


@pytest.mark.parametrize(("rows", "d_out"), [(2048, 9), (2048, 1024), (6, 1025)])
def test_d_out_is_checked_before_anything_is_built(tmp_path: Path, rows: int, d_out: int) -> None:
    np.save(tmp_path / "x.npy", np.full((rows, 1), 0.5))
    refused(
        run("steps", "--lesson", "trainable", "--inputs", str(tmp_path / "x.npy"), "--d-out", str(d_out)), "--d-out"
    )


def test_a_weights_file_cannot_set_a_huge_d_out(tmp_path: Path) -> None:
    w = {n: np.full((3, 5000), 0.1) for n in ("W_query", "W_key", "W_value")}
    np.savez(tmp_path / "w.npz", **w)
    refused(run("steps", "--lesson", "trainable", "--weights", str(tmp_path / "w.npz")), "--d-out")


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("def build(*a):\n    raise SystemExit(0)\n", "SystemExit"),
        ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
        ("class Odd(BaseException):\n    pass\n\ndef build(*a):\n    raise Odd('no')\n", "Odd: no"),
        ("def build(*a):\n    import os\n    raise GeneratorExit()\n", "GeneratorExit"),
    ],
)
def test_a_pipeline_that_exits_or_raises_anything_is_one_line(tmp_path: Path, body: str, where: str) -> None:
    src = tmp_path / "p.py"
    src.write_text("NARRATIVE = {'en': {'title': 't', 'summary': 's', 'stages': {}}}\n" + body)
    res = run("steps", "--pipeline", f"{src}:build")
    refused(res, where)
    assert res.stdout == "" or res.stdout.startswith("Error")
    assert os.path.exists(src)
