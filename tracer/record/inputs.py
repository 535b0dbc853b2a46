"""Loading and validating what gets traced: embeddings, tokens, query, dtype.

Every problem raises :class:`~tracer.errors.InputError` with one line that
names it.  Accepted sources:

* nothing: the tutorial's six 3-d embeddings of "Your journey starts with one step.";
* an array-like (nested lists, numpy array, torch tensor) from Python;
* a file: ``.json`` (a list of rows, or ``{"inputs": [...], "tokens": [...]}``),
  ``.csv`` (one row per token; see :func:`read_csv`), ``.npy`` (a 2-d numeric
  array, no pickles) or ``.pt`` (a 2-d tensor, or a dict with ``inputs`` and
  optional ``tokens``, loaded with ``weights_only=True``);
* text: :func:`from_text` embeds whitespace-separated tokens with seeded random
  numbers.
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tracer.core.files import quoted
from tracer.core.fmt import printable
from tracer.core.limits import MAX_CELLS, MAX_DIM, MAX_TOKENS
from tracer.errors import InputError, InputNote
from tracer.message import Message, shortened
from tracer.record import untrusted

if TYPE_CHECKING:
    import torch

TUTORIAL_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
TUTORIAL_INPUTS = [
    [0.43, 0.15, 0.89],  # Your     x(1)
    [0.55, 0.87, 0.66],  # journey  x(2)
    [0.57, 0.85, 0.64],  # starts   x(3)
    [0.22, 0.58, 0.33],  # with     x(4)
    [0.77, 0.25, 0.10],  # one      x(5)
    [0.05, 0.80, 0.55],  # step     x(6)
]

SEEDS = (-(1 << 63), (1 << 64) - 1)
"""The seeds torch's generator accepts (a 64-bit signed or unsigned number)."""
DTYPES = ("float32", "float64")


@dataclass
class Example:
    """Validated inputs: a T x d float64 array of exact input values, labels and options."""

    values: np.ndarray
    tokens: list[str]
    query: int
    dtype: str
    source: dict[str, Any] = field(default_factory=dict)
    chosen: bool = True  # False: nobody chose the query, so a lesson's own focus rule may pick it

    def for_pipeline(self) -> tuple[torch.Tensor, torch.dtype, dict[str, Any]]:
        """What every pipeline, a lesson or a teacher's own, is called with.

        The values as a tensor in the example's dtype (rounded once, from the
        exact float64 inputs), that torch dtype, and the trace metadata every
        trace starts from.
        """
        import torch

        dt = {"float32": torch.float32, "float64": torch.float64}[self.dtype]
        values = torch.tensor(self.values, dtype=torch.float64).to(dt)
        t, d = self.values.shape
        return values, dt, {"dtype": self.dtype, "n_tokens": t, "dim": d, "source": self.source}


def tutorial() -> tuple[list[list[float]], list[str]]:
    """The tutorial's embeddings and token labels."""
    return [row[:] for row in TUTORIAL_INPUTS], TUTORIAL_TOKENS[:]


DEFAULT_QUERY = 2
"""The focus query when none is given: the tutorial's second token ("journey"), or 1 for a single token."""


def validate(
    inputs: Any,
    tokens: Any = None,
    query: Any = None,
    dtype: Any = "float32",
    source: dict[str, Any] | None = None,
) -> Example:
    """Check everything the tracer needs and return an :class:`Example`.

    ``query`` None means :data:`DEFAULT_QUERY`, or 1 when there is only one token, unless the
    lesson's focus rule picks another (the example remembers that nobody chose it).
    """
    dt = _dtype(dtype)
    arr = _matrix(inputs)
    t, d = arr.shape
    chosen = query is not None
    if query is None:
        query = min(DEFAULT_QUERY, t)
    if t * t * d > MAX_CELLS or t > MAX_TOKENS or d > MAX_DIM:
        raise InputError(
            Message(
                "inputs.inputs_tokens_x_dims",
                t=t,
                d=d,
                max_tokens=MAX_TOKENS,
                max_dim=MAX_DIM,
                max_cells=MAX_CELLS,
                cells=int(t * t * d),
            )
        )
    with np.errstate(over="ignore"):
        cast = arr.astype(dt)
    if not np.isfinite(cast).all():
        r, c = np.argwhere(~np.isfinite(cast))[0]
        raise InputError(
            Message(
                "inputs.value_row_column_does", row=int(r) + 1, column=int(c) + 1, value=float(arr[r, c]), dt=str(dt)
            )
        )
    labels = _tokens(tokens, t)
    if isinstance(query, bool) or not isinstance(query, (int, np.integer)):
        raise InputError(Message("inputs.query_must_whole_number", t=t, query=repr(query)))
    if not 1 <= int(query) <= t:
        raise InputError(Message("inputs.query_out_range_there", query=str(query), t=t))
    return Example(arr, labels, int(query), dt, dict(source or {"kind": "array"}), chosen)


def example(
    inputs: Any = None,
    tokens: Any = None,
    query: int | None = None,
    dtype: Any = "float32",
    source: dict[str, Any] | None = None,
) -> Example:
    """Validate options into an :class:`Example`; ``None`` inputs are the tutorial's six tokens."""
    if inputs is None:
        inputs, default_tokens = tutorial()
        tokens = default_tokens if tokens is None else tokens
        source = source or {"kind": "tutorial"}
    return validate(inputs, tokens, query, dtype, source)


def _dtype(dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise InputError(Message("inputs.dtype_must_float32_or", dtype=repr(dtype)))
    return name


def _matrix(inputs: Any) -> np.ndarray:
    """A 2-d float64 array from nested lists, numpy or torch, with a readable error."""
    if hasattr(inputs, "detach"):  # a torch tensor, without importing torch
        inputs = inputs.detach().cpu().numpy()
    if isinstance(inputs, np.ndarray):
        if inputs.dtype.kind not in "biuf" or inputs.dtype.kind == "b":
            raise InputError(Message("inputs.inputs_must_numbers_array", dtype=str(inputs.dtype)))
        if inputs.ndim != 2:
            raise InputError(Message("inputs.inputs_must_d_table", ndim=int(inputs.ndim), shape=str(inputs.shape)))
        rows = inputs.astype(np.float64)
    else:
        rows = _rows(inputs)
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        raise InputError(Message("inputs.inputs_empty_shape_x", shape=int(rows.shape[0]), shape2=int(rows.shape[1])))
    if not np.isfinite(rows).all():
        r, c = np.argwhere(~np.isfinite(rows))[0]
        raise InputError(
            Message("inputs.value_row_column_inputs", row=int(r) + 1, column=int(c) + 1, value=float(rows[r, c]))
        )
    return rows


def _rows(inputs: Any) -> np.ndarray:
    if not isinstance(inputs, (list, tuple)):
        raise InputError(Message("inputs.inputs_must_list_rows", type=type(inputs).__name__))
    if not inputs:
        raise InputError(Message("inputs.inputs_empty_no_rows"))
    width = None
    out = []
    for r, row in enumerate(inputs, 1):
        if not isinstance(row, (list, tuple)):
            raise InputError(shortened(Message("inputs.row_not_list", r=r, row=repr(row)), "row", 200))
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise InputError(
                Message(
                    "inputs.ragged",
                    r=r,
                    count=Message("inputs.one_value") if len(row) == 1 else Message("inputs.n_values", n=len(row)),
                    width=width,
                )
            )
        vals = []
        for c, v in enumerate(row, 1):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise InputError(shortened(Message("inputs.cell_not_number", r=r, c=c, value=repr(v)), "value", 200))
            vals.append(float(v))
        out.append(vals)
    return np.array(out, dtype=np.float64).reshape(len(out), width or 0)


def _tokens(tokens: Any, t: int) -> list[str]:
    if tokens is None:
        return [f"t{i}" for i in range(1, t + 1)]
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
        raise InputError(Message("inputs.tokens_must_list_strings"))
    labels = [str(tok) for tok in tokens]
    if len(labels) != t:
        raise InputError(Message("inputs.tokens_given_input_rows", n_labels=len(labels), t=t))
    for n, lab in enumerate(labels, 1):
        if not lab.strip():
            raise InputError(Message("inputs.token_empty", n=n))
    return labels


# -- files -------------------------------------------------------------------
def read_file(path: str | Path) -> tuple[Any, list[str] | None]:
    """Read embeddings (and token labels, if the file has them) from a file."""
    p = Path(path)
    untrusted.look(p, Message("files.no_such_file", file=quoted(p)))
    if p.is_dir():
        raise InputError(Message("inputs.directory_not_inputs_file", file=quoted(p)))
    ext = p.suffix.lower()
    readers = {".json": read_json, ".csv": read_csv, ".npy": read_npy, ".pt": read_pt}
    if ext not in readers:
        raise InputError(Message("inputs.unsupported_inputs_file_type", ext=repr(ext or "(none)"), file=quoted(p.name)))
    return readers[ext](p)


def read_json(p: Path) -> tuple[Any, list[str] | None]:
    """A JSON list of rows, or an object with ``inputs`` and optional ``tokens``."""
    data = untrusted.parse_json(untrusted.read_bytes(p, "inputs file"), quoted(p.name))
    rows, tokens = (data.get("inputs"), data.get("tokens")) if isinstance(data, dict) else (data, None)
    if isinstance(data, dict) and "inputs" not in data:
        raise InputError(Message("inputs.json_object_must_inputs", file=quoted(p.name)))
    if rows is None:  # None would mean "the tutorial's inputs" to the API
        raise InputError(Message("inputs.inputs_must_list_rows_2", file=quoted(p.name)))
    return rows, tokens


def read_csv(p: Path) -> tuple[Any, list[str] | None]:
    """One row per token.  A first column that is not numeric in every row holds the token labels.

    A first row without numbers above rows with numbers is a header
    (``token,d1,d2``): it is skipped, and said in an
    :class:`~tracer.errors.InputNote` (``note:`` on the command line), so a
    first token whose numbers were mistyped is never dropped unnoticed.
    """
    try:
        text = untrusted.read_bytes(p, "inputs file").decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(Message("inputs.not_text_csv_file", file=quoted(p.name))) from None
    reader = csv.reader(text.splitlines())
    try:
        lines = [(n, r) for n, r in enumerate(reader, 1) if any(c.strip() for c in r)]
    except csv.Error as e:  # a field past csv's 131,072 characters, a NUL byte
        raise InputError(
            Message("inputs.line_not_readable_csv", file=quoted(p.name), line_num=reader.line_num, error=str(e))
        ) from None
    numbered = [any(_is_number(c) for c in r) for _, r in lines]
    if lines and not numbered[0] and (len(lines) == 1 or numbered[1]):  # a header only above numbers
        (n, header), lines = lines[0], lines[1:]
        if lines:  # a header above nothing is no rows of numbers, said below
            said = printable(", ".join(c.strip() for c in header))[:80]
            warnings.warn(InputNote(f"{quoted(p.name)}: line {n} ({said}) is read as a header"), stacklevel=2)
    rows = [r for _, r in lines]
    if not rows:
        raise InputError(Message("inputs.no_rows_numbers", file=quoted(p.name)))
    labels = None
    if all(r and not _is_number(r[0]) for r in rows) and any(len(r) > 1 for r in rows):
        labels = [r[0].strip() for r in rows]
        rows = [r[1:] for r in rows]
    out = []
    for (n, _), r in zip(lines, rows, strict=True):
        vals: list[Any] = []
        for c, cell in enumerate(r, 1):
            if not _is_number(cell):
                raise InputError(
                    shortened(
                        Message("inputs.csv_not_number", file=quoted(p.name), n=n, c=c, value=repr(cell.strip())),
                        "value",
                        200,
                    )
                )
            vals.append(float(cell))
        out.append(vals)
    return out, labels


def read_npy(p: Path) -> tuple[Any, list[str] | None]:
    """A 2-d numeric ``.npy`` array (pickled objects are refused)."""
    raw = untrusted.read_bytes(p, "inputs file")
    if raw[:6] != b"\x93NUMPY":
        raise InputError(Message("inputs.not_npy_file_no", file=quoted(p.name)))
    untrusted.npy_shape(p, raw)
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except ValueError as e:
        why = "it holds Python objects" if "pickle" in str(e) else str(e).splitlines()[0]
        raise InputError(Message("inputs.not_numeric_npy_array", file=quoted(p.name), why=why)) from None
    except (OSError, EOFError) as e:
        raise InputError(Message("inputs.not_npy_file", file=quoted(p.name), error=str(e))) from None
    return np.asarray(arr), None


def read_pt(p: Path) -> tuple[Any, list[str] | None]:
    """A tensor, or a dict with ``inputs`` and optional ``tokens``, saved by ``torch.save``."""
    import torch

    raw = untrusted.read_bytes(p, "inputs file")
    if raw[:4] != b"PK\x03\x04" and raw[:1] != b"\x80":  # torch.save writes a zip (or, long ago, a pickle)
        raise InputError(Message("inputs.not_readable_pytorch_file", file=quoted(p.name)))
    untrusted.unpacked_size(raw, quoted(p.name), "PyTorch file")  # before torch inflates anything
    try:
        obj = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as e:  # an untrusted file can fail inside torch in many ways; all mean "unreadable"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(
            shortened(Message("inputs.not_readable_pytorch", file=quoted(p.name), error=first), "error", 300)
        ) from None
    if isinstance(obj, dict):
        if "inputs" not in obj:
            raise InputError(Message("inputs.saved_dict_must_inputs", file=quoted(p.name)))
        obj, tokens = obj["inputs"], obj.get("tokens")
    else:
        tokens = None
    if not isinstance(obj, torch.Tensor):
        raise InputError(
            Message(
                "inputs.holds_not_tensor",
                file=quoted(p.name),
                held=Message("inputs.held_null") if obj is None else Message("inputs.held_a", type=type(obj).__name__),
            )
        )
    notes: list[str] = []
    values = untrusted.tensor_values(obj, quoted(p.name), notes)
    for note in notes:
        warnings.warn(InputNote(note), stacklevel=2)
    return values, tokens


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# -- text --------------------------------------------------------------------
def from_text(text: str, dim: int = 3, seed: int = 0) -> tuple[list[list[float]], list[str]]:
    """Seeded random embeddings for whitespace-separated tokens.

    Construction (stable across runs and machines): split ``text`` on
    whitespace; give each distinct token, in order of first appearance, a row
    of ``torch.rand(V, dim, generator=torch.Generator().manual_seed(seed),
    dtype=torch.float64)``; round every value to 2 decimals, like the
    tutorial's embeddings, so a student can redo the arithmetic by hand.  A
    token that repeats gets the same row every time, as an embedding table
    would give it.
    """
    import torch

    tokens = text.split()
    if not tokens:
        raise InputError(Message("inputs.no_tokens"), arg="text")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise InputError(Message("inputs.must_whole_number_least", dim=repr(dim)), arg="dim")
    if dim > MAX_DIM:
        raise InputError(Message("inputs.past_limit", dim=dim, max_dim=MAX_DIM), arg="dim")
    if len(tokens) > MAX_TOKENS:
        raise InputError(Message("inputs.tokens_past_limit", n_tokens=len(tokens), max_tokens=MAX_TOKENS), arg="text")
    if isinstance(seed, bool) or not isinstance(seed, int) or not SEEDS[0] <= seed <= SEEDS[1]:
        raise InputError(
            shortened(Message("inputs.seed_range", low=SEEDS[0], high=SEEDS[1], seed=repr(seed)), "seed", 200),
            arg="seed",
        )
    vocab = list(dict.fromkeys(tokens))
    gen = torch.Generator().manual_seed(int(seed))
    table = torch.rand(len(vocab), dim, generator=gen, dtype=torch.float64)
    rounded = [[round(v, 2) for v in row] for row in table.tolist()]
    rows = [rounded[vocab.index(tok)] for tok in tokens]
    if not all(math.isfinite(v) for row in rows for v in row):  # pragma: no cover - rand is finite
        raise InputError(Message("inputs.random_embeddings_not_finite"))
    return rows, tokens
