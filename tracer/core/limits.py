"""The documented limits on what attn-trace reads and builds, checked before anything is allocated.

Inputs, weights and trace files come from anyone; a size in one of them (a
row count, ``d_out``, a ``.npy`` header's shape, a trace node's ``shape``)
is compared with these limits before an array of that size exists, and a
file is measured before it is read.  ``docs/security.md`` lists them.
"""

from __future__ import annotations

MAX_TOKENS = 2048
"""Most rows (tokens) a trace may have."""
MAX_DIM = 1024
"""Most embedding components, and most output components (``d_out``), a trace may have."""
MAX_CELLS = 1 << 25
"""Most entries of any one recorded tensor (33,554,432: the T*T*d products of T=512 with d=128)."""
MAX_TRACE_CELLS = 8 * MAX_CELLS
"""Most entries of all the tensors of one trace together (268,435,456)."""
MAX_TRACE_VALUE_BYTES = 1 << 30
"""Most bytes of values one trace may hold in memory (1 GiB), however few bytes its file spends on them:
a derived node costs a file almost nothing, so a 200 KB file could otherwise ask for gigabytes."""
MAX_NODES = 20_000
"""Most nodes a trace file may declare (a lesson records about 60, a captured transformer block a few hundred)."""
MAX_JSON_ITEMS = 2_000_000
"""Most JSON values a trace file may spell out, counted before it is parsed as its commas and opening brackets.

Parsing costs time and memory per value, not per byte: 20 million zeros in a
60 MB file take seconds and hundreds of MB to parse before any node could be
counted.  A trace written by attn-trace spells out about 10,000 (its large
tensors are base64 strings, one value each), so this leaves room for 200 times that."""
MAX_INPUT_BYTES = 64 << 20
"""Largest inputs or weights file read (64 MiB)."""
MAX_TRACE_BYTES = 1 << 30
"""Largest trace file read (1 GiB)."""
