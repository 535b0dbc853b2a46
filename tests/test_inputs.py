"""Inputs from Python, files and text; every bad input gets one clear line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import tracer
from tracer.errors import InputError
from tracer.record import inputs

TUTORIAL = np.array(inputs.TUTORIAL_INPUTS)


def test_array_likes_trace_alike() -> None:
    a = tracer.trace_self_attention(inputs.TUTORIAL_INPUTS, tokens=inputs.TUTORIAL_TOKENS)
    b = tracer.trace_self_attention(torch.tensor(inputs.TUTORIAL_INPUTS), tokens=inputs.TUTORIAL_TOKENS)
    c = tracer.trace_self_attention(TUTORIAL, tokens=inputs.TUTORIAL_TOKENS, dtype=torch.float32)
    for t in (b, c):
        assert np.array_equal(a.tensor("z"), t.tensor("z"))
    assert tracer.trace_self_attention(TUTORIAL).tokens == ["t1", "t2", "t3", "t4", "t5", "t6"]


def test_float64_on_request() -> None:
    t = tracer.trace_self_attention(dtype=torch.float64)
    assert t.dtype == "float64" and t.tensor("omega").dtype == np.float64
    assert round(t["omega[2,1]"].value, 4) == 0.9544
    assert t["omega[2,1]"].value == pytest.approx(0.55 * 0.43 + 0.87 * 0.15 + 0.66 * 0.89, abs=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"inputs": [[1, 2], [3]]}, "ragged rows: row 2 has 1 value, row 1 has 2"),
        ({"inputs": [[1, "a"]]}, "row 1, column 2 is not a number: 'a'"),
        ({"inputs": [[1, True]]}, "not a number"),
        ({"inputs": [[1, float("nan")]]}, "row 1, column 2 is nan: inputs must be finite"),
        ({"inputs": [[float("inf")]]}, "must be finite"),
        ({"inputs": [[1e39]]}, "does not fit in float32"),
        ({"inputs": []}, "empty"),
        ({"inputs": [[]]}, "empty"),
        ({"inputs": np.zeros((0, 3))}, "empty"),
        ({"inputs": np.zeros((2, 2, 2))}, "2-d table"),
        ({"inputs": np.array([["a"]])}, "must be numbers"),
        ({"inputs": 5}, "list of rows"),
        ({"tokens": ["a", "b"]}, "2 tokens given for 6 input rows"),
        ({"tokens": ["a", "", "c", "d", "e", "f"]}, "token 2 is empty"),
        ({"query": 7}, "query 7 is out of range: there are 6 tokens, so it must be 1..6"),
        ({"query": 0}, "out of range"),
        ({"query": 1.5}, "whole number"),
        ({"dtype": "float16"}, "float32 or float64"),
        ({"inputs": np.zeros((2049, 1))}, "too large"),
        ({"inputs": np.zeros((600, 100))}, r"T\*T\*d <= 33,554,432"),
    ],
)
def test_bad_inputs(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        tracer.trace_self_attention(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"inputs": 5}, "inputs must be a list of rows, got int"),
        ({"inputs": []}, "inputs are empty (no rows)"),
        ({"inputs": np.zeros((0, 3))}, "inputs are empty (shape 0 x 3)"),
        ({"inputs": [[1, 2], 3]}, "row 2 is not a list of numbers: 3"),
        ({"inputs": np.array([[True, False]])}, "inputs must be numbers, got an array of bool"),
        ({"inputs": [[1, 2, 3], [4, 5, 1e39]]}, "value at row 2, column 3 (1e+39) does not fit in float32"),
        ({"inputs": [[1.0]], "tokens": "a"}, "tokens must be a list of strings"),  # a string is not a list of them
        ({"inputs": [[1.0]], "tokens": 5}, "tokens must be a list of strings"),
        ({"inputs": [[1.0]], "tokens": {"a"}}, "tokens must be a list of strings"),  # a set has no order
        (
            {"inputs": np.zeros((600, 100))},
            "inputs of 600 tokens x 100 dims are too large: the limits are 2048 tokens, 1024 dims "
            "and T*T*d <= 33,554,432 (here 36,000,000)",
        ),
    ],
)
def test_refusals_say_the_whole_line(kwargs: dict[str, Any], message: str) -> None:
    """Each refusal names the row, column, count or type at fault, exactly."""
    with pytest.raises(InputError) as err:
        inputs.validate(**kwargs)
    assert str(err.value) == message


@pytest.mark.parametrize("bad", [["x" * 500], [["x" * 500]]])
def test_a_long_bad_value_is_cut_in_the_message(bad: list[object]) -> None:
    with pytest.raises(InputError) as err:
        inputs.validate(bad)
    assert str(err.value).startswith("row 1") and str(err.value).endswith("xxx") and len(str(err.value)) == 200


def test_validate_defaults() -> None:
    """float32, the second token as the query, and a source that says the values came from Python."""
    ex = inputs.validate([[1.0, 2.0], [3.0, 4.0]])
    assert (ex.dtype, ex.query, ex.tokens, ex.source) == ("float32", 2, ["t1", "t2"], {"kind": "array"})
    assert inputs.validate([[1.0]]).query == 1


def test_the_size_limits_are_inclusive() -> None:
    """2048 tokens of 8 dims: the most tokens, and exactly T*T*d = 2**25 cells."""
    ex = inputs.validate(np.zeros((2048, 8)))
    assert ex.values.shape == (2048, 8)


def test_too_large_for_float32_is_one_error_and_no_numpy_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in cast" would escape as a RuntimeWarning
        with pytest.raises(InputError) as err:
            inputs.validate([[1e39]])
    assert str(err.value) == "value at row 1, column 1 (1e+39) does not fit in float32"


# -- files ---------------------------------------------------------------------
def test_json_csv_npy_pt_files(tmp_path: Path) -> None:
    rows = inputs.TUTORIAL_INPUTS
    toks = inputs.TUTORIAL_TOKENS
    (tmp_path / "a.json").write_text(json.dumps({"inputs": rows, "tokens": toks}))
    (tmp_path / "b.json").write_text(json.dumps(rows))
    (tmp_path / "c.csv").write_text(
        "token,d1,d2,d3\n" + "".join(f"{t},{r[0]},{r[1]},{r[2]}\n" for t, r in zip(toks, rows, strict=True))
    )
    (tmp_path / "d.csv").write_text("".join(",".join(map(str, r)) + "\n" for r in rows))
    np.save(tmp_path / "e.npy", TUTORIAL)
    torch.save({"inputs": torch.tensor(rows), "tokens": toks}, tmp_path / "f.pt")
    torch.save(torch.tensor(rows), tmp_path / "g.pt")
    want = tracer.trace_self_attention()
    for name, has_tokens in [
        ("a.json", 1),
        ("b.json", 0),
        ("c.csv", 1),
        ("d.csv", 0),
        ("e.npy", 0),
        ("f.pt", 1),
        ("g.pt", 0),
    ]:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            data, labels = inputs.read_file(tmp_path / name)
        assert [str(w.message) for w in said] == (
            ["'c.csv': line 1 (token, d1, d2, d3) is read as a header"] if name == "c.csv" else []
        )
        assert (labels == toks) if has_tokens else labels is None, name
        got = tracer.trace_self_attention(data, tokens=labels)
        assert np.array_equal(got.tensor("z"), want.tensor("z")), name


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("x.json", b"{not json", "'x.json' is not valid JSON"),
        ("x.json", b'{"tokens": []}', 'must have an "inputs" key'),
        ("x.csv", b"1,2\n3,abc\n", "line 2, column 2 is not a number: 'abc'"),
        ("x.csv", b"\xff\xfe\x00\x01", "not a text CSV"),
        ("x.csv", b"a,b\n", "no rows of numbers"),
        ("x.npy", b"0.1 0.2\n", "not a .npy file"),
        ("x.pt", b"not a pickle", "'x.pt' is not a readable PyTorch file"),
        ("x.txt", b"1 2 3", "unsupported inputs file type '.txt'"),
    ],
)
def test_bad_files(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(InputError, match=message) as err:
        inputs.read_file(tmp_path / name)
    assert "\n" not in str(err.value)


def test_object_npy_is_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match=r"not a numeric \.npy array"):
        inputs.read_file(tmp_path / "o.npy")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        inputs.read_file(tmp_path / "nope.json")


# -- text ----------------------------------------------------------------------
def test_text_embeddings_are_seeded_rounded_and_shared() -> None:
    rows, toks = inputs.from_text("the cat saw the dog", dim=4, seed=5)
    assert toks == ["the", "cat", "saw", "the", "dog"]
    assert rows[0] == rows[3]  # a repeated token gets its table row again
    assert all(round(v, 2) == v and 0 <= v <= 1 for r in rows for v in r)
    assert inputs.from_text("the cat saw the dog", dim=4, seed=5) == (rows, toks)
    assert inputs.from_text("the cat saw the dog", dim=4, seed=6)[0] != rows
    # the documented construction
    gen = torch.Generator().manual_seed(5)
    table = torch.rand(4, 4, generator=gen, dtype=torch.float64)
    assert rows[1] == [round(v, 2) for v in table[1].tolist()]


@pytest.mark.parametrize(
    ("text", "dim", "message"), [("  ", 3, "no tokens"), ("a b", 0, "at least 1"), ("a", 5000, "past the limit")]
)
def test_bad_text(text: str, dim: int, message: str) -> None:
    with pytest.raises(InputError, match=message):
        inputs.from_text(text, dim=dim)
