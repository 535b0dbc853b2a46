"""Sizes a file declares are counted before anything is inflated or allocated (issue 24, items 6 and 7).

A ``.pt`` or ``.npz`` file is a zip archive: the sizes of its records are
added up and refused past the input limit before ``torch.load`` or
``np.load`` inflates a byte.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner, Result

from tracer.cli import app

ZEROS = bytes(1 << 20)


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def bomb(small: bytes, mib: int) -> bytes:
    """``small`` (a zip archive) with one more DEFLATE record of ``mib`` MiB of zeros (about 1 KB per MiB on disk)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(small)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            z.writestr(info.filename, src.read(info))
        prefix = src.infolist()[0].filename.split("/")[0]
        with z.open(f"{prefix}/data/99", "w", force_zip64=True) as f:
            for _ in range(mib):
                f.write(ZEROS)
    return out.getvalue()


def _no_inflating(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("a zip bomb reached the loader")

    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(np, "load", refuse)


def test_a_pt_zip_bomb_is_refused_before_torch_inflates_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.BytesIO()
    torch.save(torch.tensor([[0.1, 0.2], [0.3, 0.4]]), buf)
    (tmp_path / "in.pt").write_bytes(bomb(buf.getvalue(), 80))
    assert (tmp_path / "in.pt").stat().st_size < 1 << 20
    _no_inflating(monkeypatch)
    r = run("steps", "--inputs", str(tmp_path / "in.pt"))
    assert r.exit_code == 2 and "would unpack to" in r.output and len(r.output.splitlines()) == 1, r.output


def test_weights_zip_bombs_are_refused_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = {n: torch.eye(2) for n in ("W_query", "W_key", "W_value")}
    buf = io.BytesIO()
    torch.save(w, buf)
    (tmp_path / "w.pt").write_bytes(bomb(buf.getvalue(), 70))
    npz = io.BytesIO()
    np.savez(npz, **{k: v.numpy() for k, v in w.items()})
    (tmp_path / "w.npz").write_bytes(bomb(npz.getvalue(), 70))
    (tmp_path / "in.json").write_text("[[1, 2], [3, 4]]")
    _no_inflating(monkeypatch)
    for name in ("w.pt", "w.npz"):
        r = run(
            "steps", "--lesson", "trainable", "--inputs", str(tmp_path / "in.json"), "--weights", str(tmp_path / name)
        )
        assert r.exit_code == 2 and "would unpack to" in r.output, r.output


def test_ordinary_pt_and_npz_files_still_load(tmp_path: Path) -> None:
    torch.save(torch.tensor([[0.1, 0.2], [0.3, 0.4]]), tmp_path / "in.pt")
    assert run("steps", "x[1,1]", "--inputs", str(tmp_path / "in.pt")).exit_code == 0
    np.savez_compressed(tmp_path / "w.npz", **{n: np.eye(2) for n in ("W_query", "W_key", "W_value")})
    r = run(
        "steps",
        "x[1,1]",
        "--lesson",
        "trainable",
        "--inputs",
        str(tmp_path / "in.pt"),
        "--weights",
        str(tmp_path / "w.npz"),
    )
    assert r.exit_code == 0, r.output


def test_a_csv_field_past_csv_s_limit_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text("label,a,b\n" + "x" * 200_000 + ",1,2\nw,3,4\n")
    r = run("steps", "--inputs", str(tmp_path / "in.csv"))
    assert r.exit_code == 2 and "'in.csv': line" in r.output and len(r.output.splitlines()) == 1, r.output


def test_values_a_trace_would_need_are_counted_before_decoding(tmp_path: Path) -> None:
    import json

    import tracer
    from tests.hostile import seal
    from tracer.core import limits, serialize

    doc = serialize.to_dict(tracer.trace_lesson("simple", dtype="float64"))
    rows = limits.MAX_CELLS // 1024
    for n in range(7):  # each within the per-tensor limit, 7 x 256 MiB in all: a file of a few hundred bytes more
        doc["nodes"].append(
            {**doc["nodes"][0], "name": f"pad{n}", "axes": ["a", "b"], "split": [2], "args": [],
             "value": {"dtype": "float64", "shape": [rows, 1024], "encoding": "list", "data": [0.0]}}
        )  # fmt: skip
    path = tmp_path / "big.json"
    path.write_text(seal(doc), encoding="utf-8")
    assert path.stat().st_size < 1 << 20 and json.loads(path.read_text())["nodes"][-1]["name"] == "pad6"
    r = run("verify", str(path))
    assert r.exit_code == 2 and "-byte limit for one trace" in r.output, r.output
