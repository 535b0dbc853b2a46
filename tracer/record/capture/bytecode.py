"""Where the value an op returned goes: the store that follows the call, read from the running bytecode.

A name taken from the source needs the source (a file, or a notebook cell
that ``linecache`` knows); code typed into ``python -`` or a bare REPL has
none.  The frame's bytecode is always there: ``frame.f_lasti`` is the
instruction running the op (a ``CALL``, ``BINARY_OP`` or ``LOAD_ATTR``), and
following the value it leaves on the stack through the next instructions
finds where it ends: a ``STORE_FAST``/``STORE_NAME``/``STORE_GLOBAL``/
``STORE_DEREF`` (``q = …``), an ``UNPACK_SEQUENCE`` and its stores
(``q, k, v = x.split(…)``), a ``STORE_ATTR`` (``self.q = …``), a
``STORE_SUBSCR`` (``scores[i] = …``), ``POP_TOP`` (an expression statement),
``RETURN_VALUE``, or ``YIELD_VALUE``/``LIST_APPEND`` (a generator's or a
list comprehension's value, followed on into the frame that unpacks it by
:mod:`.site`).  A value that becomes an operand (``softmax(a / b)``)
is followed as the result of the op that took it, so every op of one
statement ends at the same store, and ``q, k, v = a(x), b(x), c(x)`` sends
each call's value to its own name (the compiler swaps them on the stack).

Only plain stack traffic is followed; a jump other than ``JUMP_FORWARD``, a
comprehension's append or an opcode not listed here gives up (None), and the
caller falls back to the source.  Nothing here runs the code.
"""

from __future__ import annotations

import bisect
import dis
from dataclasses import dataclass, replace
from functools import lru_cache
from types import CodeType

_STORE = {"STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"}
_LOAD = {"LOAD_FAST", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE", "LOAD_CONST"}
_NOP = {"NOP", "CACHE", "EXTENDED_ARG", "PRECALL", "KW_NAMES", "RESUME", "TO_BOOL"}
_END = {"POP_TOP": "expr", "RETURN_VALUE": "return", "YIELD_VALUE": "yield", "LIST_APPEND": "yield"}
_TWO_TO_ONE = {"BINARY_OP", "BINARY_SUBSCR", "COMPARE_OP", "IS_OP", "CONTAINS_OP"}
_ONE_TO_ONE = {"UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT", "UNARY_NOT", "GET_LEN"}


@dataclass(frozen=True)
class Flow:
    """Where one op's value went."""

    end: int  # bytecode offset of the instruction that took it last (one per statement execution)
    targets: tuple[str, ...]  # the names it was stored under (one per element when unpacked)
    kind: str  # "assign", "expr", "return"
    store: str = ""  # ``t[i] = …``: the tensor written into
    element: int | None = None  # ``return a, b``: the value's place in the tuple returned
    direct: bool = True  # stored or returned as it is, no op taking it on the way (``m = torch.ones(…)``)


@lru_cache(maxsize=512)
def _code(code: CodeType) -> tuple[tuple[dis.Instruction, ...], dict[int, int]]:
    ins = tuple(dis.get_instructions(code))
    return ins, {x.offset: n for n, x in enumerate(ins)}


@lru_cache(maxsize=512)
def _offsets(code: CodeType) -> tuple[int, ...]:
    return tuple(x.offset for x in _code(code)[0])


def _effect(x: dis.Instruction) -> tuple[int, int] | None:
    """(popped, pushed) of one instruction, for the plain stack operations followed here."""
    op, arg = x.opname, x.arg or 0
    if op in _NOP:
        return (0, 0)
    if op == "LOAD_GLOBAL":
        return (0, 2 if arg & 1 and _version() >= (3, 11) else 1)
    if op in _LOAD or op == "PUSH_NULL":
        return (0, 1)
    if op == "LOAD_ATTR":
        return (1, 2 if arg & 1 and _version() >= (3, 12) else 1)
    if op == "LOAD_METHOD":
        return (1, 2)
    if op in _TWO_TO_ONE:
        return (2, 1)
    if op in _ONE_TO_ONE:
        return (1, 1)
    if op == "CALL":
        return (arg + 2, 1)
    if op == "CALL_KW":
        return (arg + 3, 1)
    if op == "CALL_FUNCTION_EX":
        return (3 + (arg & 1), 1)
    if op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_SLICE", "BUILD_STRING"):
        return (arg, 1)
    if op == "BUILD_MAP":
        return (2 * arg, 1)
    if op == "BUILD_CONST_KEY_MAP":
        return (arg + 1, 1)
    if op in _STORE:
        return (1, 0)
    if op == "STORE_ATTR":
        return (2, 0)
    if op == "STORE_SUBSCR":
        return (3, 0)
    if op == "UNPACK_SEQUENCE":
        return (1, arg)
    if op in _END:
        return (1, 0)
    return None


@lru_cache(maxsize=1)
def _version() -> tuple[int, int]:
    import sys

    return sys.version_info[:2]


def _at(code: CodeType, lasti: int) -> int | None:
    """Index of the instruction running at ``lasti``.

    While a call into a Python function runs (``Tensor.split``,
    ``torch.einsum``), Python 3.11 reports ``f_lasti`` past the ``CALL``, on
    its last inline cache entry: that is the ``CALL`` still.
    """
    ins, where = _code(code)
    n = where.get(lasti)
    if n is None:
        n = bisect.bisect_right(_offsets(code), lasti) - 1
        if n < 0 or ins[n].opname not in ("CALL", "CALL_KW", "CALL_FUNCTION_EX", "BINARY_SUBSCR", "BINARY_OP"):
            return None
    return n


def flow(code: CodeType, lasti: int) -> Flow | None:
    """Follow the value the instruction at ``lasti`` leaves on the stack to where it ends (None: not followed)."""
    ins, where = _code(code)
    n = _at(code, lasti)
    if n is None or _effect(ins[n]) is None:
        return None
    if ins[n].opname == "UNPACK_SEQUENCE":  # ``k, v = tensor``: iterating the tensor is the op (``unbind``)
        names = _stores(ins, n + 1, ins[n].arg or 0)
        return Flow(ins[_stores_end(ins, n + 1, len(names))].offset, names, "assign") if names else None
    depth = 0  # of our value, from the top of the stack
    above: list[str] = []  # what each slot above it is called (top last), for ``t[i] = …``
    elem: int | None = None  # our value's position in the tuple being built, if it is in one
    took = False  # whether an op took our value and left its own result instead
    m = n + 1
    while m < len(ins):
        x = ins[m]
        m += 1
        if x.opname == "JUMP_FORWARD" and isinstance(x.argval, int) and x.argval in where:
            m = where[x.argval]
            continue
        if x.opname in ("SWAP", "COPY"):
            depth, above = _shuffle(x.opname, x.arg or 1, depth, above)
            continue
        eff = _effect(x)
        if eff is None:
            return None
        pops, pushes = eff
        if depth >= pops:  # untouched
            del above[len(above) - pops :]
            label = _label(x) if pushes == 1 else ""
            above += [""] * (pushes - 1) + [label] if pushes else []
            depth += pushes - pops
            continue
        taken = _taken(x, depth, above)
        if taken is not None:
            taken = replace(taken, direct=not took)
            return replace(taken, element=elem) if taken.kind == "return" and elem is not None else taken
        if x.opname == "UNPACK_SEQUENCE" and elem is not None:  # ``a, b = f(x), g(x)`` built as a tuple
            depth, above = elem, [""] * elem
            elem = None
            continue
        if x.opname == "UNPACK_SEQUENCE":
            names = _stores(ins, m, x.arg or 0)
            return Flow(ins[_stores_end(ins, m, len(names))].offset, names, "assign") if names else None
        if pushes == 0:
            return None
        elem = (pops - 1 - depth) if x.opname == "BUILD_TUPLE" else None
        took = took or x.opname != "BUILD_TUPLE"
        depth, above = 0, []  # from here on, the result of the op that took it
    return None


def _shuffle(op: str, k: int, depth: int, above: list[str]) -> tuple[int, list[str]]:
    """``SWAP k``/``COPY k`` moving our value (at ``depth``) and the named slots above it."""
    if op == "COPY":
        if k - 1 == depth:  # ``a = b = f(x)``: the copy on top is stored first
            return 0, []
        label = above[len(above) - k] if k <= len(above) else ""
        return depth + 1, [*above, label]
    if depth == 0:
        return k - 1, ["" for _ in range(k - 1)]
    if depth == k - 1:
        return 0, []
    return depth, [""] * len(above)


def _taken(x: dis.Instruction, depth: int, above: list[str]) -> Flow | None:
    """Where our value ends if instruction ``x`` stores or drops it (None: it goes on)."""
    if x.opname in _STORE and depth == 0:
        return Flow(x.offset, (str(x.argval),), "assign")
    if x.opname == "STORE_ATTR" and depth == 1:
        return Flow(x.offset, (str(x.argval),), "assign")
    if x.opname == "STORE_SUBSCR" and depth == 2:
        return Flow(x.offset, (), "assign", above[0] if len(above) == 2 else "")
    if x.opname in _END:
        return Flow(x.offset, (), _END[x.opname])
    return None


def _label(x: dis.Instruction) -> str:
    """The name a value goes by: ``t`` for ``LOAD_FAST t``, ``a`` for ``self.a`` (else "")."""
    if (x.opname in _LOAD and x.opname != "LOAD_CONST") or x.opname in ("LOAD_ATTR", "LOAD_METHOD"):
        return str(x.argval)
    return ""


def _stores(ins: tuple[dis.Instruction, ...], start: int, count: int) -> tuple[str, ...]:
    """The names of ``count`` stores from ``start`` (after an ``UNPACK_SEQUENCE``), or () if not plain.

    A store is ``STORE_FAST x`` or ``LOAD_FAST self; STORE_ATTR attn`` (``x, self.attn = …``).
    """
    names: list[str] = []
    m = start
    while len(names) < count and m < len(ins):
        x = ins[m]
        if x.opname in _STORE:
            names.append(str(x.argval))
            m += 1
        elif x.opname in _LOAD and m + 1 < len(ins) and ins[m + 1].opname == "STORE_ATTR":
            names.append(str(ins[m + 1].argval))
            m += 2
        else:
            return ()
    return tuple(names) if len(names) == count else ()


def _stores_end(ins: tuple[dis.Instruction, ...], start: int, count: int) -> int:
    """Index of the last instruction of the ``count`` stores from ``start`` (see :func:`_stores`)."""
    m = start
    for _ in range(count):
        m += 1 if ins[m].opname in _STORE else 2
    return m - 1


def call(code: CodeType, lasti: int) -> tuple[str, tuple[str, ...]] | None:
    """The callee and positional argument names of the ``CALL`` at ``lasti``: ``("sa_v2.W_query", ("inputs",))``."""
    ins, _ = _code(code)
    n = _at(code, lasti)
    if n is None or ins[n].opname != "CALL":
        return None
    argc = ins[n].arg or 0
    end = n
    while end > 0 and ins[end - 1].opname in ("PRECALL", "KW_NAMES", "CACHE"):
        end -= 1
    spans: list[tuple[int, int]] = []
    for need in [1] * argc + [2]:
        start = _span(ins, end, need)
        if start is None:
            return None
        spans.append((start, end))
        end = start
    callee = [x for x in ins[spans[-1][0] : spans[-1][1]] if x.opname != "PUSH_NULL"]
    attrs = ("LOAD_ATTR", "LOAD_METHOD")
    if not callee or callee[0].opname not in _LOAD or any(x.opname not in attrs for x in callee[1:]):
        return None
    name = ".".join(str(x.argval) for x in callee)
    args = []
    for a, b in reversed(spans[:-1]):
        one = ins[a:b]
        args.append(str(one[0].argval) if len(one) == 1 and one[0].opname in _LOAD - {"LOAD_CONST"} else "")
    return name, tuple(args)


def _span(ins: tuple[dis.Instruction, ...], end: int, need: int) -> int | None:
    """Start of the instructions before ``end`` that leave ``need`` values on the stack."""
    acc = 0
    for k in range(end - 1, -1, -1):
        eff = _effect(ins[k])
        if eff is None or ins[k].opname in _STORE | set(_END):
            return None
        acc += eff[1] - eff[0]
        if acc == need:
            return k
    return None
