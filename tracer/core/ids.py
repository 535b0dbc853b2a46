"""The step-id grammar and the index templates used in formulas.

An id is dot-separated *segments*, each a name with optional 1-based indices::

    x[2,1]            input x(2), component 1
    omega[2,1]        score of query 2 against key 1
    omega[2,1].p[3]   the 3rd product inside that dot product
    omega[2,1].s[2]   the running sum after 2 products
    check.omega       a tensor-level step (no indices)

The names joined by dots name the *node* (``omega.p``); the indices, read left
to right, index its axes.  Giving fewer indices than the node has axes selects
a slice (``alpha[2]`` is the whole weight row of query 2).

Templates (formulas, plain-text forms) write indices as ``<i>``, ``<k-1>`` or
``<i,j>``; :func:`fill` substitutes 1-based values.  A multi-index is written
run together (``21``) when every axis it names has at most 9 entries, and
comma-separated (``12,3``) otherwise, so subscripts are never ambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9, ]*)\])?")
_PLACEHOLDER = re.compile(r"<([a-z][a-z0-9_]*'?(?:[+-][0-9]+)?(?:,[a-z][a-z0-9_]*'?(?:[+-][0-9]+)?)*)>")
_TERM = re.compile(r"([a-z][a-z0-9_]*'?)([+-][0-9]+)?")  # a primed axis (j') is a summation index, never bound


def parse(step_id: str) -> tuple[str, list[tuple[str, int]], tuple[int, ...]]:
    """Split an id into its node name, its segments (name, index count) and its 1-based indices.

    Raises ``ValueError`` with a readable message when the id is malformed.
    """
    text = step_id.strip()
    if not text:
        raise ValueError("empty step id")
    segments: list[tuple[str, int]] = []
    indices: list[int] = []
    for part in text.split("."):
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise ValueError(f"malformed step id {step_id!r}: cannot read {part!r}")
        name, idx = m.group(1), m.group(2)
        count = 0
        if idx is not None:
            items = [s.strip() for s in idx.split(",")]
            if not all(s.isdigit() for s in items):
                raise ValueError(f"malformed step id {step_id!r}: indices must be whole numbers")
            count = len(items)
            indices.extend(int(s) for s in items)
        segments.append((name, count))
    node = ".".join(name for name, _ in segments)
    return node, segments, tuple(indices)


def render(node: str, split: Sequence[int], index: Sequence[int]) -> str:
    """Write the id of element or slice ``index`` (1-based) of a node whose segments take ``split`` indices.

    Segments past the given indices are written bare: ``omega[2].p`` is every
    product of query 2's scores.
    """
    out = []
    pos = 0
    for name, n in zip(node.split("."), split, strict=True):
        take = list(index[pos : pos + n])
        pos += n
        out.append(f"{name}[{','.join(map(str, take))}]" if take else name)
    return ".".join(out)


def pattern(node: str, split: Sequence[int], axes: Sequence[str]) -> str:
    """The shape of a node's element ids, its axes as letters: ``omega[i,j].p[k]``."""
    letters = iter(axes)
    segs = []
    for name, n in zip(node.split("."), split, strict=True):
        segs.append(f"{name}[{','.join(next(letters) for _ in range(n))}]" if n else name)
    return ".".join(segs)


def fill(template: str, values: Mapping[str, int], sizes: Mapping[str, int]) -> str:
    """Substitute ``<i>``-style placeholders with 1-based index values.

    An axis without a value (a slice step) is written as its letter, so the
    row ``alpha[2]`` reads ``\\alpha_{2j}``.
    """

    def sub(m: re.Match[str]) -> str:
        parts = []
        wide = False
        for term in m.group(1).split(","):
            t = _TERM.fullmatch(term)
            assert t is not None
            axis, off = t.group(1), int(t.group(2) or 0)
            if axis not in values:  # an unbound axis stays a letter: alpha_{2j}
                parts.append(term)
                continue
            parts.append(str(values[axis] + off))
            wide = wide or sizes.get(axis, 1) > 9
        return ("," if wide and len(parts) > 1 else "").join(parts)

    return _PLACEHOLDER.sub(sub, template)


def rename(template: str, mapping: Mapping[str, str]) -> str:
    """Rename the axes a template's placeholders use (``<i>`` -> ``<j>``).

    ``mapping`` sends an axis to an index expression (``"j"``, ``"k-1"``); an
    axis mapped to ``"*"`` becomes the literal ``\\cdot`` placeholder-free form.
    """

    def sub(m: re.Match[str]) -> str:
        terms = []
        for term in m.group(1).split(","):
            t = _TERM.fullmatch(term)
            assert t is not None
            new = mapping.get(t.group(1), t.group(1))
            if new == "*":
                return "\\cdot"
            terms.append(new + (t.group(2) or ""))
        return "<" + ",".join(terms) + ">"

    return _PLACEHOLDER.sub(sub, template)


# -- globs over ids ------------------------------------------------------------
def glob_matcher(pattern: str) -> Any:
    """A predicate for ids matching ``pattern``.

    ``*`` matches any run of characters within one segment (it never crosses a
    dot), ``**`` matches anything, ``?`` one character; all else is literal.
    """
    parts = re.split(r"(\*\*|\*|\?)", pattern)
    wild = {"**": ".*", "*": "[^.]*", "?": "[^.]"}
    rx = "".join(wild.get(p, re.escape(p)) for p in parts)
    return re.compile(rx).fullmatch


_SHAPED = re.compile(r"([A-Za-z0-9_*?]+)(?:\[([0-9*?,]*)\])?")


def id_shape(pattern: str) -> list[tuple[str, list[str] | None]] | None:
    """A glob written like an id (``omega[2,*].p[*]``) as segments of (name glob, index globs).

    None for any other glob (``omega**``, ``omega[1*``), which is matched by
    scanning ids instead.
    """
    if "**" in pattern:
        return None
    out: list[tuple[str, list[str] | None]] = []
    for part in pattern.split("."):
        m = _SHAPED.fullmatch(part)
        if not m:
            return None
        out.append((m.group(1), None if m.group(2) is None else m.group(2).split(",")))
    return out


def may_match(name: str, pattern: str) -> bool:
    """Cheap pre-filter on a node's first name segment; never rejects a node with a matching id."""
    m = re.match(r"[A-Za-z0-9_]*", pattern)
    lit = m.group(0) if m else ""
    first = name.split(".", 1)[0]
    nxt = pattern[len(lit) : len(lit) + 1]
    if nxt in ("*", "?"):
        return first.startswith(lit)
    return first == lit
