"""What the student's run hands back to the judge: plain data, and how it crosses the pipe unchanged.

The check is two halves.  :mod:`.gather` runs the student's code (builds the
module, finds which parameters are the query, key and value weights, runs it
on the lesson's inputs, on a shorter sequence and, built again, at other
sizes) and keeps only data: the student's tensors, the weights it found, the
results.  :mod:`.run` judges that data against a reference it computes
itself.  ``attn-trace check`` runs the first half in a child process and the
second in the parent, so the verdict is never computed where the student's
code ran.

:func:`encode` turns an :class:`Evidence` into JSON (arrays as float64 bytes
in base64, never pickle); :func:`.decode.decode` reads it back and refuses, with
:class:`Malformed`, anything that is not well-formed data within the limits:
wrong types, arrays whose bytes do not fit their shape, too many or too large
arrays, non-finite weights, a captured trace that does not pass the trace
file's own checks.  Well-formed data can still lie about values; the judge
compares them with its own reference, so a lie only passes when it *is*
the lesson's attention on the judge's inputs with the weights it names
(``docs/security.md``).
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tracer.compare.check.model import Role, Seen
from tracer.core.trace import Trace
from tracer.errors import TracerError
from tracer.message import Message

MAX_DIMS = 6
MAX_SIDE = 4096
MAX_ELEMENTS = 2_000_000
"""The most entries one array may have (the lessons' tensors have a few hundred)."""
MAX_TOTAL = 8_000_000
"""The most entries all arrays of one message may have together."""
MAX_ITEMS = 20_000
"""The most tensors one run may report."""
MAX_RUNS = 16
"""The most runs one check may report (a generation's calls are the most: a few)."""
MAX_TEXT = 4000
"""The longest string accepted in a field (names, lines, messages); tracebacks may be longer."""
MAX_DETAILS = 200_000
MAX_TRACE = 48 * 1024 * 1024
"""The longest captured run accepted, as trace-file text."""

ROLES = (
    "W_query", "W_key", "W_value", "b_query", "b_key", "b_value",
    "W_out", "b_out", "W_out_other", "b_out_other", "form",
)  # fmt: skip
"""The role names a check assigns (:mod:`.roles`, :mod:`.wrapper`)."""
MODES = ("eval", "train")


class Malformed(TracerError):
    """The student's process sent data that is not what a run of the check produces."""


@dataclass
class Failure:
    """A crash of the student's code in one run: the one line, the traceback, the exception alone."""

    message: Message
    details: str = ""
    cause: str = ""


@dataclass
class Other:
    """The second build, at other sizes: what went wrong building it, or its weights and results per mode.

    ``results[mode]`` is an array, or a message saying what the call did
    instead (``raised ValueError: …``, ``returned tuple``).
    """

    problem: Message | None = None
    roles: dict[str, Role] = field(default_factory=dict)
    results: dict[str, np.ndarray | Message] = field(default_factory=dict)
    tried: int = 0  # which of the build's sizes these are (:func:`.resize.alternatives`)
    first: Message | None = None  # at the fallback sizes: what went wrong at the first ones


@dataclass
class Run:
    """One way the student's code was called, and what it computed.

    ``name`` is the run a lesson's quantities name (``eval``, ``train``,
    ``short``; ``block`` for a function called at another block size;
    ``call:3-4`` for one call of a generation).  ``seen`` holds the tensors
    the run computed (under capture: every one; otherwise none), ``output``
    its result (None when it crashed), ``captured`` the captured run and
    ``error`` the crash that ended it, kept because a crash is itself a
    finding (a mask that cannot take a shorter sequence).
    """

    name: str
    seen: list[Seen] = field(default_factory=list)
    output: np.ndarray | None = None
    captured: Trace | None = None
    error: Failure | None = None


@dataclass
class Evidence:
    """One student's runs, as data: everything the judge needs and nothing it must trust.

    ``runs`` are the calls of the student's code (:class:`Run`), in the
    order they were made, and ``other`` the second builds at other sizes.
    The rest says how the code was built and called: ``built`` the
    constructor call; ``square`` that the module was built with
    ``d_in = d_out``; ``wrap`` each head's width when it is the book's
    wrapper of heads (0 otherwise) and ``heads`` the path of its
    ``ModuleList``; ``given`` the parameters of ``forward`` the check passed
    beyond the tokens, each with its kind (:mod:`.forwardargs`);
    ``returned`` is ``tuple`` or ``list`` when ``forward`` returned one whose
    first element was taken as the output (:func:`.student.returned`);
    ``bias`` says the projections' biases are the module's own design (its
    constructor takes no ``qkv_bias``, :func:`.build.own_bias`): the
    reference adds them.  ``structural`` is what building found when the
    module's weights are another attention than the lesson's (a code and its
    sentence's details): there are then no runs, and the catalogue's
    structure hypotheses read it.
    """

    name: str
    built: str = ""
    square: bool = False
    wrap: int = 0
    heads: str = ""
    roles: dict[str, Role] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    other: list[Other] | None = None  # one per second build (:func:`.resize.builds`)
    structural: tuple[str, dict[str, str]] | None = None
    given: dict[str, str] = field(default_factory=dict)
    returned: str = ""
    bias: bool = False

    def run(self, name: str) -> Run | None:
        """The run called ``name``, or None when the code was not run that way."""
        return next((r for r in self.runs if r.name == name), None)

    @property
    def output(self) -> np.ndarray:
        """The first run's result (empty when there is none)."""
        first = self.runs[0].output if self.runs else None
        return np.zeros(0) if first is None else first


def encode(ev: Evidence) -> dict[str, Any]:
    """``ev`` as JSON-able data (see :func:`.decode.decode`)."""
    return {
        "name": ev.name,
        "built": ev.built,
        "square": ev.square,
        "wrap": ev.wrap,
        "heads": ev.heads,
        "roles": [_role(r) for r in ev.roles.values()],
        "runs": [_run(r) for r in ev.runs],
        "other": None if ev.other is None else [_other(o) for o in ev.other],
        "structural": None if ev.structural is None else [ev.structural[0], ev.structural[1]],
        "given": dict(ev.given),
        "returned": ev.returned,
        "bias": ev.bias,
    }


def _run(r: Run) -> dict[str, Any]:
    return {
        "name": r.name,
        "seen": [_seen(s) for s in r.seen],
        "output": None if r.output is None else pack(r.output),
        "captured": None if r.captured is None else _trace_text(r.captured),
        "error": None if r.error is None else _failure(r.error),
    }


def _trace_text(trace: Trace) -> str:
    """The captured run as trace-file text; non-finite numbers in its notes (a bound of NaN) become strings."""
    import json

    from tracer.core.serialize import digest, to_dict

    doc = to_dict(trace)
    doc["meta"] = _json_safe(doc["meta"])
    for node in doc["nodes"]:
        node["attrs"] = _json_safe(node.get("attrs", {}))
    doc["digest"] = digest(doc)
    return json.dumps(doc, ensure_ascii=True, sort_keys=True, allow_nan=False)


def _json_safe(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def pack(a: np.ndarray) -> dict[str, Any]:
    """An array as JSON: its shape and its float64 bytes (little-endian) in base64."""
    a = np.ascontiguousarray(a, dtype="<f8")
    return {"shape": list(a.shape), "f8": base64.b64encode(a.tobytes()).decode("ascii")}


def _seen(s: Seen) -> dict[str, Any]:
    return {"id": s.id, "op": s.op, "where": s.where, "value": pack(s.value)}


def _role(r: Role) -> dict[str, Any]:
    return {"role": r.role, "param": r.param, "how": r.how.to_json(), "value": pack(r.value)}


def _failure(f: Failure) -> dict[str, Any]:
    return {"message": f.message.to_json(), "details": f.details, "cause": f.cause}


def _other(o: Other) -> dict[str, Any]:
    results = {m: v.to_json() if isinstance(v, Message) else pack(v) for m, v in o.results.items()}
    return {
        "problem": None if o.problem is None else o.problem.to_json(),
        "roles": [_role(r) for r in o.roles.values()],
        "results": results,
        "tried": o.tried,
        "first": None if o.first is None else o.first.to_json(),
    }
