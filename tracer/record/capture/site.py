"""Where in the user's code an op ran: the statement, and the names it assigns.

Captured ids follow the code (``attn_scores = queries @ keys.T`` names the
product ``attn_scores``), so each op is traced back to the innermost frame
outside torch and attn-trace.  Where the op's value goes is read from that
frame's bytecode (:mod:`.bytecode`: the store that follows the call), which
works in a file, ``exec``, ``python -``, a REPL and a notebook alike; the
statement looked up in the file's syntax tree (parsed once per file) is the
fallback, and gives the call a library module was entered from.  Nothing
here runs or changes the user's code.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from types import CodeType, FrameType

import torch

from tracer.record.capture import bytecode

_TRACER = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SKIP = (os.path.dirname(torch.__file__) + os.sep, _TRACER + os.sep)
_STDLIB_SKIP = ("contextlib.py", "functools.py")


@dataclass(frozen=True)
class Site:
    """One execution point of a user statement."""

    frame: int  # id of the frame object (only compared while the frame is alive)
    start: int  # the statement: its first line, or (read from the bytecode) -1 - the offset of its store
    lasti: int  # bytecode offset inside the frame, to tell loop iterations apart
    targets: tuple[str, ...]  # names the statement assigns (``a = …``, ``self.a = …``, ``a, b = …``)
    kind: str  # "assign", "return", "expr" or "other"
    call: tuple[str, tuple[str, ...]]  # the statement's call ``a.b(x, y)``: ("a.b", ("x", "y")); ("", ()) if none
    where: str  # "file.py:LINE" (base name only)
    code: str  # the function's name
    store: str = ""  # the tensor a write through indexing assigns into (``scores[i, j] = …``: "scores")
    element: int | None = None  # ``return a, b``: the place of the value in the tuple returned
    func: str = ""  # the function whose statement this is (the caller's, for a value a helper returns to it)
    caller: str = ""  # the user function that called ``func`` ("" if torch or nobody did)


def user_file(name: str) -> bool:
    """True for a source file of the user's code: not torch's, not attn-trace's, not a context-manager helper."""
    return not name.startswith(_SKIP) and not name.endswith(_STDLIB_SKIP)


OPENED: set[CodeType] = set()
"""Code objects of torch functions being decomposed (``multi_head_attention_forward``): their frames count as
the user's, so their steps are named after torch's own variables (``q``, then documented names such as ``scores``)."""


def _user_frame(depth: int) -> FrameType | None:
    f: FrameType | None = sys._getframe(depth + 1)
    while f is not None:
        if f.f_code in OPENED or user_file(f.f_code.co_filename):
            return f
        f = f.f_back
    return None


def variable(value: object, depth: int = 2) -> str | None:
    """The name a user frame gives ``value`` (a local first, then a module global), if any."""
    f = _user_frame(depth)
    if f is None:
        return None
    for scope in (f.f_locals, f.f_globals):
        for name, v in scope.items():
            if v is value and not name.startswith("_"):
                return name
    return None


def stored_name(depth: int = 2) -> str:
    """The variable the innermost user statement stores the value just made in, as it is ("" if none).

    ``padding = torch.tensor(…)`` gives ``padding``; a helper's ``return
    torch.rand(…)`` gives what its caller stores it in (``x = make_inputs()``);
    the ``torch.ones`` of ``mask = torch.tril(torch.ones(T, T))`` gives ""
    (the ``tril`` takes it first).
    """
    f = _user_frame(depth)
    got = bytecode.flow(f.f_code, f.f_lasti) if f is not None else None
    back = f.f_back if f is not None else None
    if f is not None and back is not None and got is not None and got.direct and got.kind == "return" and _helper(f):
        got = bytecode.flow(back.f_code, back.f_lasti)
    if got is None or not got.direct or got.kind != "assign" or len(got.targets) != 1 or got.element is not None:
        return ""
    name = got.targets[0]
    return name if name.isidentifier() and not name.startswith("_") else ""


def user_site(depth: int = 2) -> Site | None:
    """The statement of the innermost user frame above the caller, or None (no user frame)."""
    f = _user_frame(depth)
    if f is None:
        return None
    line = f.f_lineno or 0
    start, targets, kind, call, store = statement(f.f_code.co_filename, line, f.f_code.co_firstlineno)
    got = bytecode.flow(f.f_code, f.f_lasti)
    element = got.element if got is not None else None
    if got is not None and got.kind == "yield":  # ``q, k, v = (f(t) for t in …)``: where the generator's values go
        start, targets, kind, element = _consumer(f, start, targets)
    elif got is not None and got.kind == "return" and _helper(f):  # ``x, attn = attention(q, k, v)``
        back = f.f_back
        assert back is not None
        start, targets, kind, element = _returned(back, got.element, (-1 - got.end, got.targets, got.kind))
    elif got is not None:  # the bytecode says where the value goes, with or without a source
        start, targets, kind = -1 - got.end, got.targets, got.kind
        store = got.store or (store if kind == "assign" and not targets else "")
        call = bytecode.call(f.f_code, f.f_lasti) or call
    where = f"{os.path.basename(f.f_code.co_filename)}:{line}"
    home = f.f_back if got is not None and got.kind == "return" and _helper(f) and f.f_back is not None else f
    up = home.f_back
    caller = up.f_code.co_name if up is not None and user_file(up.f_code.co_filename) else ""
    code = f.f_code.co_name
    return Site(id(f), start, f.f_lasti, targets, kind, call, where, code, store, element, home.f_code.co_name, caller)


OUTER: set[int] = set()
"""Ids of the frames running a ``with tracer.capture()`` block: a function called there is the captured code
itself, so what it returns keeps its own name (as under ``trace_torch``), not the block's variable."""


def _helper(f: FrameType) -> bool:
    """A function of the user's called from the user's code inside the capture (not a ``forward``, not torch's)."""
    back = f.f_back
    return back is not None and f.f_code not in OPENED and back.f_code not in OPENED and user_file(
        back.f_code.co_filename
    ) and id(back) not in OUTER and f.f_code.co_name not in ("forward", "<module>")  # fmt: skip


def _returned(
    back: FrameType, element: int | None, own: tuple[int, tuple[str, ...], str]
) -> tuple[int, tuple[str, ...], str, int | None]:
    """Where the caller stores what a helper returns: its names, and which one this value is (else ``own``)."""
    got = bytecode.flow(back.f_code, back.f_lasti)
    if got is None or got.kind != "assign" or not got.targets:
        return (*own, None)
    if element is None and len(got.targets) == 1:
        return -1 - got.end, got.targets, "assign", None
    if element is not None and element < len(got.targets):
        return -1 - got.end, got.targets, "assign", element
    return (*own, None)


def _consumer(f: FrameType, start: int, targets: tuple[str, ...]) -> tuple[int, tuple[str, ...], str, int | None]:
    """A generator's or list comprehension's value unpacked by the frame that runs it.

    Returns (start, the unpack's names, kind, which one).  The comprehension's
    frame keeps its iterator in ``.0``; a tuple's or list's iterator tells how
    far it has gone, so the value made now is the one of that place; for
    other iterators (``zip``) :data:`BY_ORDER` leaves it to the order of the
    iterations (:func:`tracer.record.capture.naming.final_names`).
    """
    back = f.f_back
    got = bytecode.flow(back.f_code, back.f_lasti) if back is not None else None
    if got is None or len(got.targets) < 2:
        return start, targets, "assign", None
    place = BY_ORDER  # which value: the naming counts the comprehension's iterations
    it = f.f_locals.get(".0")
    try:
        reduced = it.__reduce__() if it is not None else None
        if isinstance(reduced, tuple) and len(reduced) == 3 and isinstance(reduced[2], int):
            place = reduced[2] - 1
    except (TypeError, AttributeError):
        place = BY_ORDER
    return -1 - got.end, got.targets, "assign", place


BY_ORDER = -1
"""``Site.element`` of a comprehension's value whose place only the order of its iterations tells."""


Call = tuple[str, tuple[str, ...]]
Stmt = tuple[int, int, tuple[str, ...], str, Call, str]


def statement(filename: str, line: int, first: int = 0) -> tuple[int, tuple[str, ...], str, Call, str]:
    """(first line, assigned names, kind, call, store) of the innermost statement of ``filename`` holding ``line``.

    Only statements from line ``first`` on count (the running function's
    first line): code in a lambda is not the statement the lambda sits in.
    """
    best: Stmt | None = None
    for st in _statements(filename):
        if first <= st[0] <= line <= st[1] and (best is None or st[1] - st[0] <= best[1] - best[0]):
            best = st
    return (best[0], best[2], best[3], best[4], best[5]) if best is not None else (line, (), "other", ("", ()), "")


@lru_cache(maxsize=256)
def _statements(filename: str) -> tuple[Stmt, ...]:
    text = "".join(linecache.getlines(filename))
    if not text:
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            out.append((node.lineno, end, _targets(node), _kind(node), _call(node), _store(node)))
    return tuple(out)


def _call(node: ast.stmt) -> Call:
    """The dotted callee and the plain-name arguments of a statement that is one call (``y = a.b(x)``)."""
    value = getattr(node, "value", None)
    if not isinstance(value, ast.Call):
        return ("", ())
    parts: list[str] = []
    f: ast.expr = value.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if not isinstance(f, ast.Name):
        return ("", ())
    parts.append(f.id)
    names = tuple(a.id if isinstance(a, ast.Name) else "" for a in value.args)
    return (".".join(reversed(parts)), names)


def _kind(node: ast.stmt) -> str:
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        return "assign"
    if isinstance(node, ast.Return):
        return "return"
    return "expr" if isinstance(node, ast.Expr) else "other"


def _targets(node: ast.stmt) -> tuple[str, ...]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return _names(node.targets[0])
    if isinstance(node, ast.AnnAssign | ast.AugAssign):
        return _names(node.target)
    return ()


def _store(node: ast.stmt) -> str:
    """The tensor a statement writes into through indexing: ``a[i] = …``, ``self.a[i, j] += …`` -> ``a``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target: ast.expr = node.targets[0]
    elif isinstance(node, ast.AugAssign):
        target = node.target
    else:
        return ""
    if not isinstance(target, ast.Subscript):
        return ""
    while isinstance(target, ast.Subscript):
        target = target.value
    got = _names(target)
    return got[0] if len(got) == 1 else ""


def _names(target: ast.expr) -> tuple[str, ...]:
    if isinstance(target, ast.Name):
        return (target.id,)
    if isinstance(target, ast.Attribute):
        return (target.attr,)
    if isinstance(target, ast.Tuple | ast.List):
        parts = [_names(e) for e in target.elts]
        if all(len(p) == 1 for p in parts):
            return tuple(p[0] for p in parts)
    return ()
