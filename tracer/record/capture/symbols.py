"""A captured step's id as the symbol its formulas write: the code's variable, marked by what was done to it.

Captured ops write their formulas with the operands' ids
(``\\sum_d q.view.transpose\\, k.view.transpose.transpose``); ids are exact,
but inside the maths they read as code.  When the capture ends every id a
formula names gets a symbol, the way a textbook would write it:

* the variable as a LaTeX identifier: one letter as it is (``q``), one
  letter and a word as a subscripted letter (``k_new``: ``k_{\\mathrm{new}}``),
  longer names in italics (``\\mathit{att}``);
* a module's weight and bias as ``W_{\\mathrm{query}}`` and ``b_{\\mathrm{query}}``;
* a tensor rearranged (viewed, split into heads, sliced) with a prime,
  ``q'``, whatever the number of moves; a matrix transposed (its last two
  axes swapped) with ``^{\\top}``: ``k.view.transpose.transpose`` is ``{k'}^{\\top}``;
* the n-th value stored in a variable (``att_2``) with ``^{(2)}``; a value a
  later op reassigned (``att_softmax``) or one computed inside the
  statement that assigns the variable (``att.matmul``) with the op's name
  as a superscript;
* the left-to-right form a check compares torch's result with (``N.s``,
  ``N.loop``, ``N.quot``) with a wide tilde over the result's symbol.

On one trace (one page) two ids never share a symbol: a clash takes the
module the variable lives in as a superscript, else a number in brackets,
and one id always reads the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tracer.core.trace import Node

MOVES = {"view", "reshape", "transpose", "permute", "getitem", "unsqueeze", "squeeze", "expand", "unflatten"}
MOVES |= {"flatten", "split", "chunk", "unbind", "cat", "stack", "lookup", "put", "repeat_interleave", "repeat"}
MOVES |= {"contiguous", "T", "mT", "t", "movedim", "swapaxes", "narrow", "select"}
"""Ops that only rearrange entries: a prime (``^{\\top}`` for a transpose that is one)."""
REDONE = {"s", "loop", "quot"}
"""Parts that are the result worked out left to right: a tilde over the result's symbol."""
PARTS = {"xw", "alpha", "beta", "p", "t", "max", "shift", "exp", "sum", "scaled", "shifted", "norm", "prod", "c"}
"""Other parts of a step's form (``c_attn.xw``: the products' sums of the projection ``c_attn``)."""
REASSIGNED = ("masked_fill", "softmax", "matmul", "einsum", "where", "linear", "div", "mul", "add", "sub", "bmm")
"""Ops whose name ends an id when they reassign a variable (``att_masked_fill``)."""

_NUMBERED = re.compile(r"^(?P<stem>.+?)_(?P<n>[0-9]+)$")
_AFTER = re.compile(r"^(?P<stem>[A-Za-z_][A-Za-z0-9_]*?)_(?P<op>" + "|".join(REASSIGNED) + ")$")


def text(word: str) -> str:
    """A word as upright LaTeX text: ``masked_fill`` -> ``\\mathrm{masked\\_fill}``."""
    return r"\mathrm{" + word.replace("_", r"\_") + "}"


def identifier(name: str) -> str:
    """A variable's name as a LaTeX identifier: ``q``, ``k_{\\mathrm{new}}``, ``\\mathit{att}``."""
    if re.fullmatch(r"[A-Za-z]", name):
        return name
    m = re.fullmatch(r"(?P<letter>[A-Za-z])_(?P<rest>[A-Za-z0-9_]+)", name)
    if m:
        return f"{m.group('letter')}_{{{text(m.group('rest'))}}}"
    return r"\mathit{" + name.replace("_", r"\_") + "}"


def _up(symbol: str, mark: str) -> str:
    """``symbol`` with a superscript (a symbol that has one already grouped first: ``{x^{(2)}}^{\top}``)."""
    return f"{_inner(symbol)}^{{{mark}}}"


def _primed(symbol: str) -> str:
    """``symbol`` with a prime: ``q'``, ``{x^{(2)}}'``."""
    return f"{_inner(symbol)}'"


def _inner(symbol: str) -> str:
    return f"{{{symbol}}}" if "^" in symbol else symbol


def grouped(symbol: str) -> str:
    """A symbol a subscript may follow: braced if it has scripts or primes of its own (``{k_{\\mathrm{new}}}``)."""
    return f"{{{symbol}}}" if any(c in symbol for c in "_^'") else symbol


class Symbols:
    """The symbols of one trace's ids, given out in the order they are asked for (see the module doc)."""

    def __init__(self, nodes: Mapping[str, Node], modules: Iterable[str] = ()) -> None:
        self.nodes = nodes
        self.modules = set(modules)
        self.given: dict[str, str] = {}
        self.used: set[str] = set()

    def of(self, name: str) -> str:
        """The symbol of id ``name`` on this trace (the same each time it is asked for)."""
        if name not in self.given:
            for cand in self._candidates(name):
                if cand not in self.used:
                    break
            self.given[name] = grouped(cand)
            self.used.add(cand)
        return self.given[name]

    def _candidates(self, name: str) -> Iterable[str]:
        first, _ = self._base(name)
        yield first
        scope = name.rpartition(".")[0]
        while scope and scope not in self.modules and scope in self.nodes:
            scope = scope.rpartition(".")[0]
        if scope:  # ``attn.y`` and ``mlp.y``: the module each lives in
            yield _up(first, text(scope.rpartition(".")[2]))
        n = 2
        while True:
            yield _up(first, f"[{n}]")
            n += 1

    def _base(self, name: str) -> tuple[str, bool]:
        """(symbol, whether it ends in a prime) of ``name`` before clashes are resolved."""
        node = self.nodes.get(name)
        head, _, last = name.rpartition(".")
        op = _NUMBERED.sub(r"\g<stem>", last)
        derived = head in self.nodes and (op in MOVES | REDONE | PARTS or head not in self.modules)
        if node is None or node.op == "input" or not derived:
            return self._root(name, node), False
        symbol, primed = self._base(head)
        if op in MOVES:
            if _swaps_last_two(node, head):
                return _up(symbol, r"\top"), False
            return (symbol, True) if primed else (_primed(symbol), True)
        if op in REDONE:
            return rf"\widetilde{{{symbol}}}", False
        return _up(symbol, text(op)), False

    def _root(self, name: str, node: Node | None) -> str:
        """A variable's own symbol: a weight, a bias, the n-th value of a variable, one a later op reassigned."""
        head, _, stem = name.rpartition(".")
        if node is not None and node.op == "input":
            owner = head.rpartition(".")[2]
            if stem in ("weight", "bias") and owner:
                return f"{stem[0].upper() if stem == 'weight' else 'b'}_{{{text(owner)}}}"
            m = re.fullmatch(r"(?P<owner>.+)_(?P<kind>weight|bias)", _NUMBERED.sub(r"\g<stem>", stem))
            if m:
                return f"{'W' if m.group('kind') == 'weight' else 'b'}_{{{text(m.group('owner'))}}}"
        marks: list[str] = []
        m = _NUMBERED.match(stem)
        if m and int(m.group("n")) >= 2 and name not in self.modules:
            stem = m.group("stem")
            marks.append(f"({int(m.group('n'))})")
        r = _AFTER.match(stem)
        if r:
            stem = r.group("stem")
            marks.append(text(r.group("op")))
        symbol = identifier(stem)
        return _up(symbol, r"\,".join(marks)) if marks else symbol


def _swaps_last_two(node: Node, head: str) -> bool:
    """Whether a layout step is a matrix transpose: its last two axes are its operand's, swapped."""
    if node.op not in ("transpose", "permute") or len(node.axes) < 2 or len(node.args) != 1:
        return False
    ref = node.args[0]
    want = (*node.axes[:-2], node.axes[-1], node.axes[-2])
    return ref.node == head and ref.index is not None and tuple(ref.index) == want
