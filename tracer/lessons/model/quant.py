"""GGUF tensor data to float64 numbers, exactly: F32, F16, Q8_0, Q4_0 and Q4_1.

The quantized types store a row in blocks of 32 numbers.  Each block has a
float16 scale ``d`` (Q4_1 also a float16 offset ``m``) followed by its 32
codes: one signed byte each for Q8_0, half a byte each for Q4_0 and Q4_1
(the low halves of the 16 bytes are numbers 1-16 of the block, the high
halves numbers 17-32).  The number a code stands for is

- Q8_0: ``d · q``   (q from −128 to 127)
- Q4_0: ``d · (q − 8)``   (q from 0 to 15)
- Q4_1: ``d · q + m``   (q from 0 to 15)

float16 scales and offsets are exact in float64, and so are these products
and sums (a float16 times a small integer plus a float16 needs far fewer
than 53 bits): the float64 numbers returned are exactly the numbers the file
means, where float32 arithmetic could round ``d · q + m``.
"""

from __future__ import annotations

import numpy as np

BLOCK = 32
BYTES = {"Q8_0": 2 + 32, "Q4_0": 2 + 16, "Q4_1": 4 + 16}
"""Bytes per block of 32 numbers for each quantized type."""
PLAIN: dict[str, np.dtype[np.floating]] = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2")}
TYPES = (*PLAIN, *BYTES)
"""The tensor types this reader takes."""


def row_bytes(kind: str, width: int) -> int:
    """Bytes of one stored row of ``width`` numbers (``width`` a multiple of 32 for the quantized types)."""
    if kind in PLAIN:
        return PLAIN[kind].itemsize * width
    return BYTES[kind] * (width // BLOCK)


def dequantize(kind: str, raw: np.ndarray, rows: int, width: int) -> np.ndarray:
    """The ``rows × width`` float64 numbers that ``raw`` (the tensor's bytes, ``uint8``) encodes as ``kind``."""
    flat = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
    if flat.size != rows * row_bytes(kind, width):
        raise ValueError(f"{kind} data of {flat.size} bytes for {rows} × {width} numbers")
    if kind in PLAIN:
        return flat.view(PLAIN[kind]).astype(np.float64).reshape(rows, width)
    blocks = flat.reshape(-1, BYTES[kind])
    d = blocks[:, 0:2].copy().view("<f2").astype(np.float64)
    if kind == "Q8_0":
        q = blocks[:, 2:].copy().view(np.int8).astype(np.float64)
        out = d * q
    else:
        start = 4 if kind == "Q4_1" else 2
        packed = blocks[:, start:]
        q = np.concatenate((packed & 0x0F, packed >> 4), axis=1).astype(np.float64)
        if kind == "Q4_0":
            out = d * (q - 8.0)
        else:
            m = blocks[:, 2:4].copy().view("<f2").astype(np.float64)
            out = d * q + m
    return out.reshape(rows, width)
