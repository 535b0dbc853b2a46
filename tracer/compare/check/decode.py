"""Read a student's evidence back from JSON, every field checked (:func:`decode`).

The parent runs this on what the child sent, so nothing here trusts it:
types, the sizes of arrays against their bytes, how many arrays and entries
a message holds (:mod:`.evidence`'s limits), finite weights, the role names
a check assigns, and the captured trace through the trace file's own
checks.  The first field that is wrong raises :class:`~.evidence.Malformed`
naming it.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np

from tracer.compare.check.evidence import (
    MAX_DETAILS,
    MAX_DIMS,
    MAX_ELEMENTS,
    MAX_ITEMS,
    MAX_RUNS,
    MAX_SIDE,
    MAX_TEXT,
    MAX_TOTAL,
    MAX_TRACE,
    MODES,
    ROLES,
    Evidence,
    Failure,
    Malformed,
    Other,
    Run,
)
from tracer.compare.check.model import Role, Seen
from tracer.core.trace import Trace
from tracer.errors import TracerError
from tracer.message import Message

SENT = ("trouble.", "resize.", "how.", "word.")
"""The families of messages a child may send: what went wrong, a second build, how a weight was read."""


def decode(doc: Any) -> Evidence:
    """The :class:`Evidence` in ``doc``, every field checked; :class:`Malformed` names the first that is wrong."""
    budget = [MAX_TOTAL]
    d = _dict(doc, "the message")
    return Evidence(
        name=_text(d.get("name"), "name"),
        built=_text(d.get("built"), "built"),
        square=_bool(d.get("square"), "square"),
        wrap=_int(d.get("wrap"), "wrap"),
        heads=_text(d.get("heads"), "heads"),
        roles=_roles(d.get("roles"), budget),
        runs=[_run(r, budget) for r in _list(d.get("runs"), "runs", MAX_RUNS)],
        other=None if d.get("other") is None else [_other_of(o, budget) for o in _list(d.get("other"), "other", 4)],
        structural=None if d.get("structural") is None else _structural(d.get("structural")),
        given=_given(d.get("given", {})),
        returned=_returned(d.get("returned", "")),
        bias=_bool(d.get("bias", False), "bias"),
    )


def _run(v: Any, budget: list[int]) -> Run:
    d = _dict(v, "a run")
    name = _text(d.get("name"), "a run's name", 100)
    output = d.get("output")
    captured = d.get("captured")
    return Run(
        name,
        _seens(d.get("seen"), budget, f"{name}'s seen"),
        None if output is None else _arr(output, budget, f"{name}'s output"),
        None if captured is None else _trace(captured),
        None if d.get("error") is None else _failure(d.get("error")),
    )


def _dict(v: Any, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise Malformed(f"{what} is not an object")
    return v


def _list(v: Any, what: str, most: int = MAX_ITEMS) -> list[Any]:
    if not isinstance(v, list):
        raise Malformed(f"{what} is not a list")
    if len(v) > most:
        raise Malformed(f"{what} has {len(v)} entries (at most {most})")
    return v


def _text(v: Any, what: str, most: int = MAX_TEXT) -> str:
    if not isinstance(v, str):
        raise Malformed(f"{what} is not a string")
    if len(v) > most:
        raise Malformed(f"{what} is {len(v)} characters long (at most {most})")
    return v


def _message(v: Any, what: str) -> Message:
    """A message the child sent (:meth:`Message.from_json`), of a family it may send and no longer than a text."""
    try:
        said = Message.from_json(v)
    except ValueError as e:
        raise Malformed(f"{what} is not a message: {str(e)[:100]}") from None
    if not said.key.startswith(SENT):
        raise Malformed(f"{what} is a message the check does not send ({said.key[:40]!r})")
    if len(json.dumps(v)) > MAX_TEXT:
        raise Malformed(f"{what} is longer than {MAX_TEXT} characters")
    return said


def _bool(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise Malformed(f"{what} is not true or false")
    return v


def _int(v: Any, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_SIDE:
        raise Malformed(f"{what} is not a whole number from 0 to {MAX_SIDE}")
    return v


def _arr(v: Any, budget: list[int], what: str, finite: bool = False) -> np.ndarray:
    d = _dict(v, what)
    shape = _list(d.get("shape"), f"{what}'s shape", MAX_DIMS)
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_SIDE for n in shape):
        raise Malformed(f"{what}'s shape {shape!r} is not a list of sizes from 0 to {MAX_SIDE}")
    count = math.prod(shape)
    if count > MAX_ELEMENTS or count > budget[0]:
        raise Malformed(f"{what} has {count} entries: more than a check's tensors can have")
    budget[0] -= count
    raw = d.get("f8")
    if not isinstance(raw, str) or len(raw) > 4 * (count * 8 + 2) // 3 + 4:
        raise Malformed(f"{what}'s data is not base64 text of its size")
    try:
        data = base64.b64decode(raw.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise Malformed(f"{what}'s data is not base64") from None
    if len(data) != count * 8:
        raise Malformed(f"{what} holds {len(data)} bytes where its shape {tuple(shape)} needs {count * 8}")
    a = np.frombuffer(data, dtype="<f8").astype(np.float64).reshape(shape)
    if finite and not np.isfinite(a).all():
        raise Malformed(f"{what} has non-finite entries")
    return a


def _seens(v: Any, budget: list[int], what: str) -> list[Seen]:
    out = []
    for n, item in enumerate(_list(v, what)):
        d = _dict(item, f"{what}[{n}]")
        value = _arr(d.get("value"), budget, f"{what}[{n}]")
        out.append(
            Seen(_text(d.get("id"), f"{what}[{n}].id"), _text(d.get("op"), "op"), value, _text(d.get("where"), "where"))
        )
    return out


def _roles(v: Any, budget: list[int]) -> dict[str, Role]:
    out: dict[str, Role] = {}
    for n, item in enumerate(_list(v, "roles", len(ROLES))):
        d = _dict(item, f"roles[{n}]")
        role = _text(d.get("role"), "role")
        if role not in ROLES or role in out:
            raise Malformed(f"roles[{n}] is {role[:40]!r}: not a role of the check, or a second one")
        value = _arr(d.get("value"), budget, role, finite=True)
        out[role] = Role(role, _text(d.get("param"), "param"), _message(d.get("how"), "how"), value)
    return out


def _failure(v: Any) -> Failure:
    d = _dict(v, "a run's error")
    details = _text(d.get("details"), "details", MAX_DETAILS)
    return Failure(_message(d.get("message"), "message"), details, _text(d.get("cause"), "cause"))


def _other_of(v: Any, budget: list[int]) -> Other:
    d = _dict(v, "other")
    results: dict[str, np.ndarray | Message] = {}
    for mode, r in _dict(d.get("results"), "other's results").items():
        if mode not in MODES:
            raise Malformed(f"other's results name a mode {str(mode)[:20]!r}")
        said = isinstance(r, dict) and "key" in r
        results[mode] = _message(r, mode) if said else _arr(r, budget, f"other's {mode} result")
    problem = None if d.get("problem") is None else _message(d.get("problem"), "problem")
    tried = _int(d.get("tried", 0), "other's sizes")
    first = None if d.get("first") is None else _message(d.get("first"), "other's first failure")
    return Other(problem, _roles(d.get("roles"), budget), results, tried, first)


def _structural(v: Any) -> tuple[str, dict[str, str]]:
    items = _list(v, "structural", 2)
    if len(items) != 2:
        raise Malformed("structural is not a code and its details")
    code, detail = items[0], _dict(items[1], "structural detail")
    if len(detail) > 20:
        raise Malformed("structural detail has too many fields")
    from tracer.compare.check.structure import BUILT

    if code not in BUILT:
        raise Malformed(f"the structural difference {str(code)[:40]!r} is not one the check knows")
    return _text(code, "structural code", 100), {_text(k, "key", 100): _text(x, "detail") for k, x in detail.items()}


def _given(v: Any) -> dict[str, str]:
    """The parameters passed beyond the tokens: names, each with a kind :mod:`.forwardargs` makes."""
    from tracer.compare.check.forwardargs import TABLE
    from tracer.compare.check.gradargs import KINDS

    given = _dict(v, "given")
    if len(given) > 20:
        raise Malformed("given names too many parameters")
    out = {}
    for k, kind in given.items():
        if kind not in TABLE and kind not in KINDS:
            raise Malformed(f"given: {str(kind)[:40]!r} is not a kind of argument the check passes")
        out[_text(k, "given parameter", 100)] = kind
    return out


def _returned(v: Any) -> str:
    """What ``forward`` returned around its output: nothing, or a ``tuple`` or ``list``."""
    if v not in ("", "tuple", "list"):
        raise Malformed(f"returned: {str(v)[:40]!r} is not tuple or list")
    return str(v)


def _trace(v: Any) -> Trace:
    from tracer.core.serialize import loads

    try:
        return loads(_text(v, "the captured run", MAX_TRACE), "the captured run")
    except TracerError as e:
        raise Malformed(str(e)) from None
    except (RecursionError, ValueError, TypeError, KeyError) as e:
        raise Malformed(f"the captured run is not a trace: {type(e).__name__}") from None
