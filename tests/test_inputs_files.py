"""Inputs files and text, message by message: each reader's rules and the exact line it prints.

``test_inputs.py`` checks that every kind of file traces like the tutorial and
that bad files fail; these tests pin what each reader accepts at its edges
(a CSV header, a label column, a byte-order mark, a legacy ``torch.save``)
and the whole of each error line, so a reader that says the wrong thing, or
names the wrong file, fails here.
"""

from __future__ import annotations

import fractions
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from tracer.core import limits
from tracer.errors import InputError, InputNote
from tracer.record import inputs


def read(tmp_path: Path, name: str, content: bytes) -> tuple[object, list[str] | None]:
    (tmp_path / name).write_bytes(content)
    return inputs.read_file(tmp_path / name)


def refused(tmp_path: Path, name: str, content: bytes) -> str:
    with pytest.raises(InputError) as err:
        read(tmp_path, name, content)
    assert err.value.arg is None  # a file's problem is not one argument's
    return str(err.value)


@pytest.mark.parametrize(
    ("name", "content", "rows", "labels"),
    [
        ("h.csv", b"a,b\n1,2\n", [[1.0, 2.0]], None),  # a header above numbers is skipped
        ("bom.csv", b"\xef\xbb\xbf1,2\n", [[1.0, 2.0]], None),  # a spreadsheet's byte-order mark
        ("lab.csv", b"tok,1,2\nu,3,4\n", [[1.0, 2.0], [3.0, 4.0]], ["tok", "u"]),  # labels, no header
        ("blank.csv", b"\n1,2\n , \n3,4\n", [[1.0, 2.0], [3.0, 4.0]], None),  # blank lines do not count
        ("L.JSON", b"[[1, 2]]", [[1, 2]], None),  # the extension's case does not matter
        ("o.json", b'{"inputs": [[1]], "tokens": ["a"]}', [[1]], ["a"]),
    ],
)
def test_readers_accept(tmp_path: Path, name: str, content: bytes, rows: object, labels: list[str] | None) -> None:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        got, got_labels = read(tmp_path, name, content)
    assert got == rows and got_labels == labels
    notes = [str(w.message) for w in said if issubclass(w.category, InputNote)]
    assert notes == (["'h.csv': line 1 (a, b) is read as a header"] if name == "h.csv" else [])  # said, not silent


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("n.json", b'{"inputs": null}', "'n.json': inputs must be a list of rows, got null"),
        (
            "k.json",
            b'{"tokens": []}',
            """'k.json': a JSON object must have an "inputs" key (and optionally "tokens")""",
        ),
        ("g.csv", b"1,2\n\n3,x\n", "'g.csv': line 3, column 2 is not a number: 'x'"),  # file lines, blanks included
        ("one.csv", b"a\nb\n", "'one.csv': line 1, column 1 is not a number: 'a'"),  # one text column is not labels
        ("two.csv", b"h1,h2\nh3,h4\n1,2\n", "'two.csv': line 1, column 1 is not a number: 'h1'"),  # one header only
        ("e.csv", b"a,b\n", "'e.csv' has no rows of numbers"),
        ("u.csv", b"\xff\xfe\x00\x01", "'u.csv' is not a text CSV file"),
        ("x.npy", b"0.1 0.2\n", "'x.npy' is not a .npy file (it has no NumPy header)"),
        ("z.pt", b"PK\x03\x04 no zip", "'z.pt' is not a readable PyTorch file: "),
        ("y.pt", b"plain text", "'y.pt' is not a readable PyTorch file (not written by torch.save)"),
        ("noext", b"1", "unsupported inputs file type '(none)' for 'noext': use .json, .csv, .npy or .pt"),
        ("t.txt", b"1", "unsupported inputs file type '.txt' for 't.txt': use .json, .csv, .npy or .pt"),
    ],
)
def test_readers_refuse_with_one_line(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    text = refused(tmp_path, name, content)
    assert text == message or (message.endswith(": ") and text.startswith(message)), text
    assert "\n" not in text


def test_a_long_cell_is_cut_in_the_message(tmp_path: Path) -> None:
    text = refused(tmp_path, "w.csv", b"1,2\n3," + b"x" * 500 + b"\n")
    assert text.startswith("'w.csv': line 2, column 2 is not a number: 'xxx") and len(text) == 200


def test_truncated_and_pickled_npy(tmp_path: Path) -> None:
    buf = io.BytesIO()
    np.save(buf, np.zeros((2, 3)))
    text = refused(tmp_path, "t.npy", buf.getvalue()[:-5])
    assert text.startswith("'t.npy' is not a numeric .npy array: ") and "48" in text  # the bytes it expected
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert refused(tmp_path, "o.npy", buf.getvalue()) == "'o.npy' is not a numeric .npy array: it holds Python objects"


def test_npy_values_come_back_as_saved(tmp_path: Path) -> None:
    want = np.array([[0.43, 0.15], [1.5, -2.0]], dtype=np.float32)
    np.save(tmp_path / "v.npy", want)
    got, labels = inputs.read_file(tmp_path / "v.npy")
    assert labels is None and np.array_equal(np.asarray(got), want) and np.asarray(got).dtype == np.float32


def test_pt_files(tmp_path: Path) -> None:
    torch.save(torch.tensor([[1.0, 2.0]]), tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    assert (tmp_path / "old.pt").read_bytes()[:1] == b"\x80"  # the pickle format of torch before 1.6
    got, labels = inputs.read_file(tmp_path / "old.pt")
    assert np.array_equal(np.asarray(got), [[1.0, 2.0]]) and labels is None
    torch.save({"inputs": torch.tensor([[3.0]]), "tokens": ["a"]}, tmp_path / "d.pt")
    got, labels = inputs.read_file(tmp_path / "d.pt")
    assert np.array_equal(np.asarray(got), [[3.0]]) and labels == ["a"]
    for name, obj, message in [
        ("l.pt", [1, 2], "'l.pt' holds a list, not a tensor"),
        ("n.pt", None, "'n.pt' holds null, not a tensor"),
        ("k.pt", {"tokens": ["a"]}, '\'k.pt\': a saved dict must have an "inputs" tensor (and optionally "tokens")'),
        ("s.pt", {"inputs": "abc"}, "'s.pt' holds a str, not a tensor"),
    ]:
        torch.save(obj, tmp_path / name)
        with pytest.raises(InputError) as err:
            inputs.read_file(tmp_path / name)
        assert str(err.value) == message


def test_a_folder_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "d.json").mkdir()
    with pytest.raises(InputError) as err:
        inputs.read_file(tmp_path / "d.json")
    assert str(err.value) == f"'{tmp_path / 'd.json'}' is a directory, not an inputs file"


def test_json_list_and_object_read_alike(tmp_path: Path) -> None:
    rows = [[0.5, 0.25], [1.0, 2.0]]
    a = read(tmp_path, "a.json", json.dumps(rows).encode())
    b = read(tmp_path, "b.json", json.dumps({"inputs": rows}).encode())
    assert a == b == (rows, None)


# -- text ----------------------------------------------------------------------
DIMS, TOKENS, (LOW, HIGH) = inputs.MAX_DIM, inputs.MAX_TOKENS, inputs.SEEDS


def test_text_defaults() -> None:
    """Three dimensions and seed 0 unless asked: the tutorial's width."""
    rows, tokens = inputs.from_text("a b")
    assert tokens == ["a", "b"] and [len(r) for r in rows] == [3, 3]
    assert (rows, tokens) == inputs.from_text("a b", dim=3, seed=0)
    table = torch.rand(2, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert rows == [[round(v, 2) for v in row] for row in table.tolist()]


@pytest.mark.parametrize(
    ("kwargs", "arg", "message"),
    [
        ({"text": " \n "}, "text", "text has no tokens"),
        ({"text": "a", "dim": True}, "dim", "dim must be a whole number of at least 1, got True"),
        ({"text": "a", "dim": 2.0}, "dim", "dim must be a whole number of at least 1, got 2.0"),
        ({"text": "a", "dim": 0}, "dim", "dim must be a whole number of at least 1, got 0"),
        ({"text": "a", "dim": DIMS + 1}, "dim", f"dim {DIMS + 1} is past the limit of {DIMS}"),
        ({"text": "a " * (TOKENS + 1)}, "text", f"text has {TOKENS + 1} tokens, past the limit of {TOKENS}"),
        ({"text": "a", "seed": True}, "seed", f"seed must be a whole number from {LOW} to {HIGH}, got True"),
        ({"text": "a", "seed": inputs.SEEDS[1] + 1}, "seed", "seed must be a whole number from "),
        ({"text": "a", "seed": inputs.SEEDS[0] - 1}, "seed", "seed must be a whole number from "),
    ],
)  # fmt: skip
def test_bad_text_names_its_argument(kwargs: dict[str, object], arg: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        inputs.from_text(**kwargs)  # type: ignore[arg-type]
    assert err.value.arg == arg
    assert str(err.value) == message or (message.endswith(" ") and str(err.value).startswith(message))


def test_the_seed_range_is_torchs() -> None:
    """Both ends of the range are seeds torch accepts."""
    for seed in inputs.SEEDS:
        rows, _ = inputs.from_text("a", dim=2, seed=seed)
        assert len(rows[0]) == 2


@pytest.mark.parametrize("name", ["big.json", "big.csv", "big.npy", "big.pt"])
def test_a_file_past_the_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 10)
    (tmp_path / name).write_bytes(b"1" * 19)
    with pytest.raises(InputError) as err:
        inputs.read_file(tmp_path / name)
    assert str(err.value) == f"'{tmp_path / name}' is 19 bytes, past the 10-byte limit for an inputs file"


def test_pt_files_are_loaded_as_weights_only(tmp_path: Path) -> None:
    """A pickle of any other object is refused by torch itself, before it can run code."""
    torch.save(fractions.Fraction(1, 3), tmp_path / "f.pt")
    text = refused(tmp_path, "f.pt", (tmp_path / "f.pt").read_bytes())
    assert text.startswith("'f.pt' is not a readable PyTorch file: Weights only load failed")


def test_torchs_own_reason_is_kept_and_cut(tmp_path: Path) -> None:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # a zip archive, but not one torch.save wrote
        z.writestr("archive/x", "hello")
    text = refused(tmp_path, "z.pt", buf.getvalue())
    assert text.startswith("'z.pt' is not a readable PyTorch file: ") and "hasRecord" in text and len(text) <= 300
    text = refused(tmp_path, "y.pt", b"PK\x03\x04 no zip" + b"x" * 400)  # its sizes cannot be read: refused
    assert text.startswith("'y.pt' is not a readable PyTorch file: not a zip archive") and len(text) <= 300


def test_tensor_problems_name_the_file(tmp_path: Path) -> None:
    torch.save(torch.zeros(2, 2, dtype=torch.bool), tmp_path / "b.pt")
    assert refused(tmp_path, "b.pt", (tmp_path / "b.pt").read_bytes()) == "'b.pt' is a tensor of booleans, not numbers"
    torch.save(torch.tensor([[0.5, 1.0]], dtype=torch.float16), tmp_path / "h.pt")
    with pytest.warns(InputNote) as notes:
        got, _ = inputs.read_file(tmp_path / "h.pt")
    assert [str(n.message) for n in notes] == ["'h.pt' holds float16: converted exactly to float64"]
    assert np.array_equal(np.asarray(got), [[0.5, 1.0]])


def test_a_label_column_beside_one_number_column(tmp_path: Path) -> None:
    assert read(tmp_path, "l.csv", b"tok,1\nu,2\n") == ([[1.0], [2.0]], ["tok", "u"])


def test_text_limits_are_inclusive() -> None:
    assert [len(r) for r in inputs.from_text("a", dim=1)[0]] == [1]
    assert len(inputs.from_text("a", dim=DIMS)[0][0]) == DIMS
    assert len(inputs.from_text("a " * TOKENS)[1]) == TOKENS


def test_a_huge_seed_is_cut_in_the_message() -> None:
    with pytest.raises(InputError) as err:
        inputs.from_text("a", seed=10**300)
    assert str(err.value).startswith("seed must be a whole number from ") and len(str(err.value)) == len("seed ") + 200


def test_a_missing_file_is_missing_whatever_its_type(tmp_path: Path) -> None:
    """A mistyped path is reported as missing, not as a file type we do not read."""
    with pytest.raises(InputError) as err:
        inputs.read_file(tmp_path / "inputs.jsno")
    assert str(err.value) == f"no such file: '{tmp_path / 'inputs.jsno'}'"


def test_a_pt_file_cut_short_names_what_went_wrong(tmp_path: Path) -> None:
    """torch's error for a pickle that ends at once has no message: its type is named instead."""
    assert refused(tmp_path, "cut.pt", b"\x80\x02") == "'cut.pt' is not a readable PyTorch file: EOFError"


def test_a_pt_file_saved_on_a_gpu_is_read_on_the_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.save records each tensor's device; a file from a CUDA machine still loads here."""
    with monkeypatch.context() as m:
        m.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")  # what a GPU tensor records
        torch.save(torch.tensor([[0.5, 1.0]]), tmp_path / "gpu.pt")
    got, labels = inputs.read_file(tmp_path / "gpu.pt")
    assert np.array_equal(np.asarray(got), [[0.5, 1.0]]) and labels is None


def test_pt_files_stay_weights_only_whatever_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD turns off torch's default, never our explicit weights_only=True."""
    torch.save(fractions.Fraction(1, 3), tmp_path / "f.pt")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    text = refused(tmp_path, "f.pt", (tmp_path / "f.pt").read_bytes())
    assert text.startswith("'f.pt' is not a readable PyTorch file: Weights only load failed")
