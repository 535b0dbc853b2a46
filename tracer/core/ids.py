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

import ast
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9, ]*)\])?")
_PLACEHOLDER = re.compile(r"<([a-z][a-z0-9_]*'?(?:[+-][0-9]+)?(?:,[a-z][a-z0-9_]*'?(?:[+-][0-9]+)?)*)>")
_TERM = re.compile(r"([a-z][a-z0-9_]*'?)([+-][0-9]+)?")  # a primed axis (j') is a summation index, never bound


def parse(step_id: str) -> tuple[str, list[tuple[str, int]], tuple[int, ...]]:
    """Split an id into its node name, its segments (name, index count) and its 1-based indices.

    Raises ``ValueError`` with a readable message when the id is malformed.
    An id as attn-trace writes it (:func:`render`) is read by :func:`_plain`;
    anything else, spaces or mistakes included, by the general reading below.
    """
    quick = _plain(step_id)
    if quick is not None:
        return quick
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


def _plain(step_id: str) -> tuple[str, list[tuple[str, int]], tuple[int, ...]] | None:
    """:func:`parse` of an id written the way :func:`render` writes one (``omega[2,122].p[5]``), else None.

    A page looks up tens of thousands of ids, all of them rendered: plain
    string splits read them several times faster than the segment pattern,
    and give the same answer.  Only ASCII names and indices of ASCII digits
    between single commas are taken; everything else is left to the
    pattern, which also words the errors.
    """
    if not step_id.isascii():
        return None
    segments: list[tuple[str, int]] = []
    indices: list[int] = []
    for part in step_id.split("."):
        name, bracket, rest = part.partition("[")
        if not name.isidentifier():
            return None
        if not bracket:
            segments.append((name, 0))
            continue
        items = rest[:-1].split(",")
        if rest[-1:] != "]" or not all(i.isdigit() for i in items):
            return None
        indices.extend(map(int, items))
        segments.append((name, len(items)))
    return ".".join(name for name, _ in segments), segments, tuple(indices)


def render(node: str, split: Sequence[int], index: Sequence[int]) -> str:
    """Write the id of element or slice ``index`` (1-based) of a node whose segments take ``split`` indices.

    Segments past the given indices are written bare: ``omega[2].p`` is every
    product of query 2's scores.  A page writes tens of thousands of ids of a
    few nodes, so each node's id shape is worked out once (:func:`_shape`)
    and an id is that shape with the numbers put in.
    """
    return _shape(node, tuple(split), len(index)).format(*index)


@lru_cache(maxsize=4096)
def _shape(node: str, split: tuple[int, ...], given: int) -> str:
    """The id of a node's entry with ``given`` indices, as a format string: ``omega[{},{}].p[{}]``."""
    out = []
    left = given
    for name, n in zip(node.replace("{", "{{").replace("}", "}}").split("."), split, strict=True):
        take = min(n, left)
        left -= take
        out.append(f"{name}[{','.join(['{}'] * take)}]" if take else name)
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
    row ``alpha[2]`` reads ``\\alpha_{2j}``.  A placeholder holding index
    arithmetic (``<(c-1)//2+1>``, as layout ops write where an entry came
    from) becomes the number it evaluates to, or ``·`` in a slice step where it
    varies.
    """
    parts = _parts(template)
    if parts is None:
        return _fill(template, values, sizes)
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        shown, wide = [], False
        for axis, off, term in part:
            if axis in values:
                shown.append(str(values[axis] + off))
                wide = wide or sizes.get(axis, 1) > 9
            else:  # an unbound axis stays a letter: alpha_{2j}
                shown.append(term)
        out.append(("," if wide and len(shown) > 1 else "").join(shown))
    return "".join(out)


Placeholder = tuple[tuple[str, int, str], ...]
"""One ``<i,j-1>`` placeholder of a template: per term its axis, its offset and its own text."""


@lru_cache(maxsize=4096)
def _parts(template: str) -> tuple[str | Placeholder, ...] | None:
    """A template cut into its literal text and its placeholders, once per template (None: read it as text).

    :func:`fill` then only puts numbers in.  A template whose literal text
    holds ``<`` or ``>`` (index arithmetic, or something that could become
    it once numbers are put in) is left to :func:`_fill`, which reads it
    the long way.
    """
    parts: list[str | Placeholder] = []
    at = 0
    for m in _PLACEHOLDER.finditer(template):
        parts.append(template[at : m.start()])
        terms = []
        for term in m.group(1).split(","):
            t = _TERM.fullmatch(term)
            assert t is not None
            terms.append((t.group(1), int(t.group(2) or 0), term))
        parts.append(tuple(terms))
        at = m.end()
    parts.append(template[at:])
    if any(isinstance(p, str) and ("<" in p or ">" in p) for p in parts):
        return None
    return tuple(p for p in parts if p != "")


def _fill(template: str, values: Mapping[str, int], sizes: Mapping[str, int]) -> str:
    """:func:`fill` by substitution, for every template (index arithmetic included)."""

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

    return _ARITH_PLACEHOLDER.sub(lambda m: _evaluate(m, values), _PLACEHOLDER.sub(sub, template))


_ARITH_PLACEHOLDER = re.compile(r"<([a-z0-9_+\-*/%()]*[*/%()][a-z0-9_+\-*/%()]*)>")
"""A placeholder holding index arithmetic (``<(c-1)//2+1>``, what a layout op's reference reads)."""


def _evaluate(m: re.Match[str], values: Mapping[str, int]) -> str:
    """The 1-based index an arithmetic placeholder names; ``·`` (it varies) while an axis it uses is unbound."""
    try:
        got = index_expr(m.group(1))(values)
    except ValueError:
        return m.group(0)
    return "·" if got is None else str(got)


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


# -- index expressions of references ---------------------------------------------
IndexFn = Callable[[Mapping[str, int]], "int | None"]

_PLAIN = re.compile(r"([a-z][a-z0-9_]*)(?:-([0-9]+))?")
_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
"""Integer arithmetic; :mod:`operator`'s forms also take numpy arrays of indices (:mod:`tracer.core.recompute`)."""


@lru_cache(maxsize=4096)
def index_expr(expr: str) -> IndexFn:
    """Compile how a reference reads one operand axis into a function of the reader's 1-based indices.

    ``"i"`` reads the reader's own index ``i``; ``"k-1"`` the one before it;
    any other integer arithmetic over the reader's axis names and whole
    numbers with ``+ - * // %`` and parentheses also works, so a layout op
    can say where each element came from: ``"2*h+c-2"`` (a head split),
    ``"(o-1)//2+1"`` and ``"(o-1)%2+1"`` (heads joined back), ``"1"`` (a
    broadcast axis of size one).  The function returns None when an axis it
    needs is not bound (a slice step).  ``"*"`` is not an expression: callers
    handle it.  Raises ``ValueError`` for anything else, so a file cannot
    smuggle code in.
    """
    plain = _PLAIN.fullmatch(expr)
    if plain:
        axis, off = plain.group(1), int(plain.group(2) or 0)
        return lambda bound: bound[axis] - off if axis in bound else None
    if len(expr) > 200:
        raise ValueError(f"index expression too long ({len(expr)} characters)")
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError:
        raise ValueError(f"bad index expression {expr!r}") from None
    fn = _compile(tree, expr)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}

    def run(bound: Mapping[str, int]) -> int | None:
        if not names <= bound.keys():
            return None
        return fn(bound)

    return run


def index_axes(expr: str) -> set[str]:
    """The reader's axes an index expression uses (``"(h-1)*2+d"`` -> {h, d}); ``ValueError`` if it is not one."""
    index_expr(expr)
    plain = _PLAIN.fullmatch(expr)
    if plain:
        return {plain.group(1)}
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


def _compile(node: ast.expr, expr: str) -> Callable[[Mapping[str, int]], int]:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
        const = int(node.value)
        return lambda bound: const
    if isinstance(node, ast.Name) and re.fullmatch(r"[a-z][a-z0-9_]*", node.id):
        name = node.id
        return lambda bound: bound[name]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _compile(node.operand, expr)
        return lambda bound: -inner(bound)
    if isinstance(node, ast.BinOp) and (type(node.op) in _ARITH or isinstance(node.op, ast.Mod)):
        left, right = _compile(node.left, expr), _compile(node.right, expr)
        if isinstance(node.op, ast.Mod):
            return lambda bound: left(bound) % right(bound) if right(bound) else 0
        if isinstance(node.op, ast.FloorDiv):
            return lambda bound: left(bound) // right(bound) if right(bound) else 0
        f = _ARITH[type(node.op)]
        return lambda bound: f(left(bound), right(bound))
    raise ValueError(f"bad index expression {expr!r}: only whole numbers, axis names and + - * // % are allowed")


# -- globs over ids ------------------------------------------------------------
RUNS = 2
"""Globs with at most this many ``*``/``**`` compile to a regular expression; more are matched in linear time."""


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A predicate for ids matching ``pattern``.

    ``*`` matches any run of characters within one segment (it never crosses a
    dot), ``**`` matches anything, ``?`` one character; all else is literal.
    A regular expression with many ``.*`` backtracks catastrophically
    (``**?**?…**!`` took 34 s for 39 characters), so a glob with more than
    :data:`RUNS` stars is matched by :func:`_linear`, a set of positions in
    the pattern advanced one character at a time: time proportional to the
    id's length times the pattern's, whatever they hold.
    """
    parts = [p for p in re.split(r"(\*\*|\*|\?)", pattern) if p]
    if sum(p in ("*", "**") for p in parts) > RUNS:
        return lambda step_id: _linear(parts, step_id)
    wild = {"**": ".*", "*": "[^.]*", "?": "[^.]"}
    compiled = re.compile("".join(wild.get(p, re.escape(p)) for p in parts))
    return lambda step_id: compiled.fullmatch(step_id) is not None


def _linear(parts: list[str], text: str) -> bool:
    """Whether glob ``parts`` (literal runs and ``*``, ``**``, ``?``) match all of ``text``, without backtracking."""
    tokens = [c for p in parts for c in ([p] if p in ("*", "**", "?") else list(p))]

    def close(states: set[int]) -> set[int]:  # a star may match nothing: step over it
        todo = list(states)
        while todo:
            k = todo.pop()
            if k < len(tokens) and tokens[k] in ("*", "**") and k + 1 not in states:
                states.add(k + 1)
                todo.append(k + 1)
        return states

    states = close({0})
    for ch in text:
        nxt: set[int] = set()
        for k in states:
            if k == len(tokens):
                continue
            tok = tokens[k]
            if tok == "**" or (tok == "*" and ch != "."):
                nxt.add(k)
            elif (tok == "?" and ch != ".") or tok == ch:
                nxt.add(k + 1)
        states = close(nxt)
        if not states:
            return False
    return len(tokens) in states


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
