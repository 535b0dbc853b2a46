"""Dequantized weights kept on disk, keyed by the SHA-256 of the model file they came from.

Turning a 4-bit model's blocks into numbers is most of what reading it
costs; the numbers never change for the same file.  The first run that
reads a quantized GGUF file writes every weight, dequantized, to

    <cache folder>/dequantized/<SHA-256 of the file>/<weight>.npy

(the cache folder of :func:`.fetch.cache_dir`, ``docs/model.md``), and
later runs read them from there, memory-mapped.  A weight is stored as
float32 when every one of its numbers is exactly a float32 (true of all of
SmolLM2's: a float16 scale times a 4-bit code plus a float16 offset rarely
needs more than 24 bits), else as float64, so what is read back is always
exactly the number the file means.

The folder is data, read as carefully as any file from a stranger: each
``.npy`` is opened with ``allow_pickle=False`` (numpy refuses object
arrays, so nothing in it can run code), and must hold a little-endian
float32 or float64 array, in C order, of exactly the shape the model's
sizes give that weight; anything else is one line naming the file (delete
the folder to rebuild it).  It is written whole or not at all: into a
hidden folder first, renamed into place once every weight is in it.  A
file that changes gets a new hash, so a stale entry is never read; the
hash is taken on every run (a fifth of a second for SmolLM2's 98 MB).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from tracer.core.files import quoted
from tracer.errors import InputError
from tracer.lessons.model import fetch
from tracer.lessons.model.checkpoint import Checkpoint
from tracer.message import Message

QUANTIZED = ("Q8_0", "Q4_0", "Q4_1")
"""Weights stored in these types are what the cache saves the work of; files without any are read directly."""
MAX_CACHED_BYTES = 4 << 30
"""A model whose weights would take more than this as float32 is not cached (read directly every time)."""
STORED = (np.dtype("<f4"), np.dtype("<f8"))


def folder_of(digest: str) -> Path:
    """The cache entry of a file with SHA-256 ``digest``."""
    return fetch.cache_dir() / "dequantized" / digest


def worth_caching(ck: Checkpoint) -> bool:
    """A GGUF file with quantized weights, small enough to keep as float32."""
    floats = sum(int(np.prod(s)) for n, s in ck.config.shapes.items() if n in ck.kinds)
    return any(k in QUANTIZED for k in ck.kinds.values()) and floats * 4 <= MAX_CACHED_BYTES


def cached(ck: Checkpoint, path: Path) -> Checkpoint:
    """``ck`` reading its weights from the cache entry of ``path`` (written first when there is none)."""
    if not worth_caching(ck):
        return ck
    entry = folder_of(fetch.sha256_of(path))
    if not entry.is_dir():
        try:
            fill(ck, entry)
        except OSError as e:  # a full disk or a read-only cache: this run reads the file itself
            fetch.say(f"cannot keep the dequantized weights in {quoted(entry.parent)} ({e.strerror or e})")
            return ck
    shapes = ck.config.shapes

    def read(name: str, rows: list[int] | None = None) -> np.ndarray:
        stored = "embed" if name == "head" and "head" not in ck.kinds else name
        a = load(entry / f"{stored}.npy", shapes[stored])
        return np.asarray(a if rows is None else a[rows], dtype=np.float64)

    return Checkpoint(ck.config, ck.tokenizer, ck.bos, read, ck.kinds, ck.source)


def fill(ck: Checkpoint, entry: Path) -> None:
    """Every weight of ``ck`` dequantized into ``entry``, through a hidden folder renamed into place at the end."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    part = entry.with_name(f".{entry.name}.{os.getpid()}.part")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir()
    try:
        for name in ck.kinds:
            w = ck.weight(name)
            narrow = w.astype("<f4")
            keep = narrow if np.array_equal(narrow, w) else w.astype("<f8")
            np.save(part / f"{name}.npy", keep, allow_pickle=False)
        try:
            part.rename(entry)
        except OSError:
            if not entry.is_dir():  # not another run that filled it first
                raise
    finally:
        shutil.rmtree(part, ignore_errors=True)


def load(path: Path, shape: tuple[int, ...]) -> np.ndarray:
    """The array in ``path``, memory-mapped, once it is float32 or float64 of ``shape`` in C order."""
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(Message("model.weight_cache_file_cannot", file=quoted(path), error=str(e))) from None
    if not isinstance(a, np.ndarray) or a.dtype not in STORED or a.shape != shape or not a.flags.c_contiguous:
        raise InputError(Message("model.weight_cache_file_does", file=quoted(path), shape=str(shape)))
    return a
