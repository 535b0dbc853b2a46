"""The header of a GGUF file, parsed as untrusted bytes: metadata, tensor directory, and where the data starts.

A GGUF file (versions 2 and 3, little-endian) is

- ``GGUF``, the version (uint32), the number of tensors and of metadata
  entries (uint64 each);
- each metadata entry: a key (a string: uint64 length, UTF-8 bytes), a value
  type (uint32) and the value; an array is an element type (uint32), a count
  (uint64) and the elements;
- each tensor: its name, the number of dimensions (uint32), the sizes
  (uint64 each, fastest-varying first), its type (uint32) and its offset
  (uint64) from the start of the data;
- padding to ``general.alignment`` (default 32), then the data.

Every count and length is checked against the bytes that are left before
anything is allocated for it, so a header that claims a billion strings is
refused at once.  The vocabulary of a real model is tens of thousands of
strings: they are read with :mod:`struct` from a memory map, which takes
a fraction of a second where a general reader that builds an array view per
string takes many.  The tensors' bytes stay in the map: :meth:`GGUF.data`
hands out one tensor's bytes, checked to lie inside the file.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tracer.core.files import quoted
from tracer.errors import InputError
from tracer.message import Message

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
"""Metadata value type -> its struct format (8 is a string, 9 an array)."""
STRING, ARRAY = 8, 9
TENSOR_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1"}
TENSOR_TYPES |= {10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 30: "BF16"}
"""Tensor type numbers by their names (the ones this lesson reads, and the common ones it names when refusing)."""
MAX_DIMS = 4
MAX_KEY = 1 << 16


@dataclass(frozen=True)
class Tensor:
    """One entry of the tensor directory."""

    name: str
    kind: str
    """``F32``, ``Q4_1`` ...; ``type 37`` for a number this reader has no name for."""
    dims: tuple[int, ...]
    """Sizes slowest-varying first (``(out, in)`` for a matrix), the reverse of the file's order."""
    start: int
    """Where its bytes start, from the beginning of the file."""


class Cursor:
    """Reads little-endian values from a buffer, every read checked against its end."""

    def __init__(self, buf: Any, where: str) -> None:
        self.buf, self.at, self.end, self.where = buf, 0, len(buf), where

    def fail(self, what: str) -> InputError:
        return InputError(Message("model.not_readable_gguf_file", where=self.where, what=what, at=self.at))

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.at + size > self.end:
            raise self.fail("it ends early (truncated?)")
        (value,) = struct.unpack_from(fmt, self.buf, self.at)
        self.at += size
        return value

    def count(self, smallest: int) -> int:
        """A uint64 count of items of at least ``smallest`` bytes each, no more than the bytes left can hold."""
        n = int(self.take("<Q"))
        if n * smallest > self.end - self.at:
            raise self.fail(f"a count of {n} items, more than the {self.end - self.at} bytes left can hold")
        return n

    def string(self) -> str:
        n = self.count(1)
        raw = bytes(self.buf[self.at : self.at + n])
        self.at += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string that is not UTF-8") from None

    def value(self, kind: int, depth: int = 0) -> Any:
        if kind in SCALARS:
            return self.take(SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind == ARRAY and depth == 0:
            inner = int(self.take("<I"))
            if inner == STRING:
                return [self.string() for _ in range(self.count(8))]
            if inner not in SCALARS:
                raise self.fail(f"an array of value type {inner}")
            fmt = SCALARS[inner]
            n = self.count(struct.calcsize(fmt))
            values = list(struct.unpack_from(f"<{n}{fmt[1]}", self.buf, self.at))
            self.at += n * struct.calcsize(fmt)
            return values
        raise self.fail(f"value type {kind}")


class GGUF:
    """A GGUF file's metadata (``fields``), tensor directory (``tensors``) and its bytes, memory-mapped."""

    def __init__(self, path: Path) -> None:
        where = quoted(path)
        try:
            with path.open("rb") as f:
                self.buf: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if path.stat().st_size else b""
        except (OSError, ValueError) as e:
            raise InputError(Message("trace_file.cannot_read", file=where, error=str(e))) from None
        self.size = len(self.buf)
        c = Cursor(self.buf, where)
        if self.size < 4 or bytes(self.buf[:4]) != b"GGUF":
            raise c.fail("it does not start with GGUF")
        c.at = 4
        version = c.take("<I")
        if version not in (2, 3):
            raise c.fail(f"version {version} (this reader takes 2 and 3, little-endian)")
        n_tensors, n_fields = c.count(8 + 4 + 8 + 4 + 8), c.count(8 + 4)
        self.fields: dict[str, Any] = {}
        for _ in range(n_fields):
            key = c.string()
            if len(key) > MAX_KEY or key in self.fields:
                raise c.fail(f"metadata key {key[:60]!r} is too long or given twice")
            self.fields[key] = c.value(int(c.take("<I")))
        directory = []
        for _ in range(n_tensors):
            name = c.string()
            n_dims = int(c.take("<I"))
            if not 1 <= n_dims <= MAX_DIMS:
                raise c.fail(f"tensor {name[:60]!r} has {n_dims} dimensions")
            dims = tuple(int(c.take("<Q")) for _ in range(n_dims))[::-1]
            number = int(c.take("<I"))
            directory.append((name, TENSOR_TYPES.get(number, f"type {number}"), dims, int(c.take("<Q"))))
        align = self.fields.get("general.alignment", 32)
        if isinstance(align, bool) or not isinstance(align, int) or not 1 <= align <= 1 << 16:
            raise c.fail(f"alignment {align!r}")
        data = -(-c.at // align) * align
        self.tensors = {name: Tensor(name, kind, dims, data + off) for name, kind, dims, off in directory}
        if len(self.tensors) != len(directory):
            raise c.fail("two tensors of the same name")

    def data(self, t: Tensor, n_bytes: int) -> np.ndarray:
        """The ``n_bytes`` bytes of tensor ``t`` (``uint8``, read-only, still in the file), or one line."""
        if t.start + n_bytes > self.size:
            raise InputError(Message("model.tensor_needs_bytes_file", name=t.name, n_bytes=n_bytes))
        return np.frombuffer(self.buf, dtype=np.uint8, count=n_bytes, offset=t.start)
