"""How a node's formula reads: the symbol of one entry, then the steps that define it.

A node names its entries with a *symbol*: LaTeX of one entry with index
placeholders in the node's axes (``\\omega_{<i,j>}``, see :mod:`tracer.core.ids`).
Its formula (``latex``) is either that symbol alone, for an entry that the
expression naming it already defines (a product ``x^{(<i>)}_{<k>}\\, x^{(<j>)}_{<k>}``,
an ``e^{\\omega_{<i,j>}}``), or the symbol followed by the steps of its
definition, each after an ``=``::

    \\omega_{<i,j>} = x^{(<i>)} \\cdot x^{(<j>)} = \\sum_{k} x^{(<i>)}_{k}\\, x^{(<j>)}_{k}
    symbol           step 1                      step 2

A worked equation on a page is that symbol, its definition's steps, then the
numbers.  :func:`definition` reads the steps with the symbol as its anchor, so
an ``=`` inside a group (``\\sum_{m = 1}``, ``\\text{a = b}``) never splits a
step, and a formula with no ``=`` at all is not mistaken for a left side.

A tensor-level node (one step for a whole matrix, ``Q = X W``, or a check)
names no entry: its symbol is empty.  Where no symbol was recorded, it is
read from the formula by :func:`stated_symbol`, once: for files written before
symbols were stored (format versions 1 and 2), when they are loaded, and for
captured PyTorch code, whose ops write free-form formulas, when its trace is
made.
"""

from __future__ import annotations

import re

SEP = " = "
"""What separates the steps of a formula (with its spaces, as every formula attn-trace writes has them)."""
_COMMAND = re.compile(r"\\([A-Za-z]+|.?)")
_OPENS = {"begin": 1, "left": 1, "end": -1, "right": -1}


def steps(formula: str) -> list[str]:
    """``formula`` cut at each ``" = "`` outside every ``{…}`` group, ``\\left…\\right`` pair and environment.

    Escaped braces (``\\{``) do not open a group.  A formula with no such
    ``=`` is one step.
    """
    out: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(formula):
        c = formula[i]
        if c == "\\":  # a command (``\\left``, not ``\\leftarrow``) or an escaped character (``\\{``)
            m = _COMMAND.match(formula, i)
            assert m is not None  # the pattern matches any backslash
            depth += _OPENS.get(m.group(1), 0)
            i = m.end()
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0 and formula.startswith(SEP, i):
            out.append(formula[start:i])
            i += len(SEP)
            start = i
            continue
        i += 1
    out.append(formula[start:])
    return out


def definition(formula: str, symbol: str) -> tuple[str, ...]:
    """The steps that define ``symbol`` in ``formula``, in order.

    - ``()`` when the formula is the symbol itself, or empty;
    - the steps after ``symbol = `` when the formula starts so (``\\omega_{21} =
      x^{(2)} \\cdot x^{(1)} = \\sum …`` gives the dot product, then the sum);
    - the whole formula as one step otherwise (a formula from a file or a
      narrative that does not begin with the entry's symbol): it still says
      what the entry equals.

    ``formula`` and ``symbol`` are both templates, or both filled in.
    """
    if not formula or formula == symbol:
        return ()
    head = symbol + SEP
    if symbol and formula.startswith(head):
        parts = steps(formula[len(head) :])
        return tuple(p for p in parts if p.strip())
    return (formula,)


def stated_symbol(formula: str, element: bool) -> str:
    """The symbol a formula states for its entry: the formula up to its first ``=``, or all of it when it has none.

    For nodes recorded without a symbol: files of format versions 1 and 2
    (whose readers named an entry this way, so their pages read as before;
    an ``=`` inside a group no longer splits) and captured PyTorch code.  A
    tensor-level node (``element`` False) names no entry.
    """
    return steps(formula)[0].strip() if element and formula else ""
