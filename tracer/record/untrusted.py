"""Reading inputs and weights files that anyone may have written: sizes first, one error type always.

Every reader of :mod:`tracer.record.inputs` and :mod:`tracer.record.weights`
goes through these helpers, so a hostile file ends in one
:class:`~tracer.errors.InputError` line, never in a stray exception or an
allocation the limits forbid:

- :func:`read_bytes`: regular files only (not ``/dev/zero`` or a pipe), at
  most :data:`~tracer.core.limits.MAX_INPUT_BYTES`, measured before reading;
- :func:`parse_json`: integers of any length become floats (a 5000-digit
  integer is just too large, not a crash), ``1e999`` and nesting too deep
  for the parser are refused, ``NaN`` and ``Infinity`` are left for
  validation, which names the row and column that is not finite;
- :func:`npy_shape`: a ``.npy`` header's shape and dtype are checked against
  the limits before the array is read;
- :func:`unpacked_size`: a ``.pt`` or ``.npz`` file is a zip archive; the
  sizes its records declare are added up and refused past
  :data:`~tracer.core.limits.MAX_INPUT_BYTES` before anything is inflated
  (a 2 MB file of compressed zeros would otherwise inflate to gigabytes);
- :func:`tensor_values`: a tensor from a ``.pt`` file as float64 numbers:
  ``bfloat16`` and ``float16`` convert exactly (and say so); sparse,
  quantized, meta and complex tensors are refused.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from tracer.core import files, limits
from tracer.core.files import quoted
from tracer.core.serialize import unique_keys
from tracer.errors import InputError
from tracer.message import Message, shortened


def look(p: Path, missing: Message) -> None:
    """Raise ``InputError(missing)`` when ``p`` does not exist, and one naming the reason when it cannot be looked at.

    ``Path.exists()`` raises for a folder this user may not search
    (``PermissionError``); that must be one line too, not a crash.
    """
    try:
        os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(missing) from None
    except OSError as e:
        raise InputError(Message("trace_file.cannot_read", file=quoted(p), error=str(e.strerror or e))) from None


def read_bytes(p: Path, what: str) -> bytes:
    """The bytes of ``p``, a regular file of at most ``MAX_INPUT_BYTES``."""
    try:
        return files.read_limited(p, limits.MAX_INPUT_BYTES, what)
    except FileNotFoundError:
        raise InputError(Message("files.no_such_file", file=quoted(p))) from None
    except IsADirectoryError:
        raise InputError(Message("files.directory_not", file=quoted(p), what=files.a_or_an(what))) from None
    except files.NotRegular as e:
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(Message("trace_file.cannot_read", file=quoted(p), error=str(e.strerror or e))) from None


def _integer(text: str) -> int | float:
    return int(text) if len(text) <= 18 else _number(text)  # a long one as a float: never int()'s digit limit


def _number(text: str) -> float:
    value = float(text)  # float() of any length of digits gives inf rather than raising
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]}{'…' if len(text) > 20 else ''} is too large")
    return value


def _constant(name: str) -> float:
    return float(name)  # NaN, Infinity: kept, so that validation names the row and column that is not finite


def parse_json(raw: bytes, name: str) -> Any:
    """The JSON document in ``raw``, every number a float (``InputError`` for a number too large or bad JSON)."""
    try:
        return json.loads(
            raw.decode("utf-8"),
            parse_int=_integer,
            parse_float=_number,
            parse_constant=_constant,
            object_pairs_hook=unique_keys,
        )
    except RecursionError:
        raise InputError(Message("files.not_valid_json_nested", name=name)) from None
    except UnicodeDecodeError:
        raise InputError(Message("files.not_valid_json_not", name=name)) from None
    except ValueError as e:  # JSONDecodeError included
        raise InputError(shortened(Message("files.not_valid_json", name=name, error=str(e)), "error", 300)) from None


def unpacked_size(raw: bytes, name: str, what: str) -> None:
    """Refuse a zip archive (``torch.save``'s format, ``.npz``) whose records would inflate past the input limit.

    The central directory says how large each record is once inflated; both
    Python's ``zipfile`` and torch's reader allocate and inflate no more than
    that, so adding the declared sizes bounds the memory a load may use.
    Nothing is inflated here.  Bytes that are not a zip archive are left to
    the loader (which refuses them in its own words); an archive Python
    cannot read is refused as ``name is not a readable <what>``, since its
    sizes cannot be counted.
    """
    import io
    import zipfile

    if raw[:4] != b"PK\x03\x04":
        return
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            records = z.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError) as e:
        raise InputError(
            shortened(Message("files.not_zip", name=name, what=what, error=str(e)), "error", 300)
        ) from None
    total = sum(r.file_size for r in records)
    if total > limits.MAX_INPUT_BYTES or len(records) > MAX_RECORDS:
        raise InputError(
            Message(
                "files.would_unpack_bytes_records",
                name=name,
                total=total,
                n_records=len(records),
                max_input_bytes=limits.MAX_INPUT_BYTES,
            )
        )


MAX_RECORDS = 4096
"""Most records a zip archive (``.pt``, ``.npz``) may hold: a tensor or a few weight matrices need a handful."""


def npy_shape(p: Path, raw: bytes) -> None:
    """Refuse a ``.npy`` file whose header announces an array past the limits, before it is read."""
    import io

    from numpy.lib import format as npf

    f = io.BytesIO(raw)
    try:
        major, _ = npf.read_magic(f)
        reader = npf.read_array_header_1_0 if major == 1 else npf.read_array_header_2_0
        shape, _, dtype = reader(f)
    except Exception as e:  # a malformed header can fail in many ways
        why = repr(str(e).splitlines()[0] if str(e) else e)
        raise InputError(
            shortened(Message("inputs.not_npy_file", file=quoted(p.name), error=why), "error", 300)
        ) from None
    if dtype.hasobject:
        raise InputError(Message("files.not_numeric_npy_array", file=quoted(p.name)))
    if len(shape) != 2:
        raise InputError(Message("files.inputs_must_d_table", file=quoted(p.name), shape=str(shape)))
    t, d = shape
    if t > limits.MAX_TOKENS or d > limits.MAX_DIM or t * t * d > limits.MAX_CELLS:
        raise InputError(Message("files.array_shape_too_large", file=quoted(p.name), shape=str(shape)))


def tensor_values(t: Any, name: str, notes: list[str] | None = None) -> np.ndarray:
    """A torch tensor from a file as a float64 numpy array (see the module docstring)."""
    import torch

    layout = getattr(t, "layout", torch.strided)
    if layout != torch.strided or getattr(t, "is_sparse", False):
        raise InputError(Message("files.sparse_tensor_save_dense", name=name, layout=str(layout)))
    if getattr(t, "is_quantized", False):
        raise InputError(Message("files.quantized_tensor_save_dequantized", name=name))
    if getattr(t, "is_meta", False) or t.device.type == "meta":
        raise InputError(Message("files.meta_tensor_shape_but", name=name))
    if t.is_complex():
        raise InputError(Message("files.complex_tensor_inputs_weights", name=name))
    if t.dtype == torch.bool:
        raise InputError(Message("files.tensor_booleans_not_numbers", name=name))
    if t.dtype in (torch.bfloat16, torch.float16):
        if notes is not None:
            notes.append(f"{name} holds {str(t.dtype).removeprefix('torch.')}: converted exactly to float64")
        t = t.to(torch.float64)
    if t.numel() > limits.MAX_CELLS:
        raise InputError(Message("files.values_past_limits_see", name=name, n=t.numel()))
    try:
        return np.asarray(t.detach().cpu().to(torch.float64).numpy())
    except (TypeError, RuntimeError) as e:
        raise InputError(
            shortened(Message("files.not_numbers", name=name, error=(str(e).splitlines() or [""])[0]), "error", 300)
        ) from None
