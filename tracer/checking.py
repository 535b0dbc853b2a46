"""One submission checked in a child process (:mod:`tracer.sandbox`): the job, and what the parent makes of it.

The job loads ``FILE.py:NAME``, checks it against the lesson and renders the
verdict in the formats the parent will write, all inside the child; it hands
back plain JSON (the check's document, the text, the HTML page), so the
parent never unpickles anything the child produced.  :func:`check_file` runs
it and turns every way it can end into a :class:`Verdict`:

- ``match`` (exit 0) or ``differs`` (exit 1): the check ran to the end;
- ``trouble`` (exit 2): the file, the signature or the student's code did
  not let the check run (one line; the traceback for ``--verbose``);
- ``no verdict`` (exit 2): the child ended without sending one (killed at
  its time or memory limit, ``os._exit``, a crash of the interpreter).
"""

from __future__ import annotations

import contextlib
import os
import traceback
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tracer import sandbox
from tracer.message import Message, render
from tracer.textsafe import printable

MEMORY_MB = 2048.0
"""Default megabytes of address space one submission may add to the checker's own."""


OUT_OF_MEMORY = ("MemoryError", "can't allocate memory", "Cannot allocate memory")
"""What a failed allocation says, in Python and in torch, when the child reaches its memory limit."""


@dataclass(frozen=True)
class Options:
    """What every submission is checked with."""

    lesson: str
    lang: str = "en"
    fmt: str = "text"  # which rendering the parent needs: text, json, html, csv, gradescope
    verbose: bool = False
    timeout: float = 60.0  # seconds one submission may take (import, build, every run); the CLI's default
    memory: float = MEMORY_MB
    sizes: dict[str, int] = field(default_factory=dict)  # d_out
    style: str | None = None  # a rotary lesson's pairing (--rope-style), None: the lesson's own
    backward: bool = False  # a hand-written backward pass (check --backward)


@dataclass
class Verdict:
    """How one submission ended: its status, the check's JSON document when it ran, and what it printed."""

    spec: str  # FILE.py:NAME as given
    status: str  # "match", "differs", "trouble", "no verdict"
    message: str = ""  # trouble / no verdict: the one line, in the language checked with (``said`` rendered)
    details: str = ""  # trouble: the traceback
    doc: dict[str, Any] | None = None
    text: str = ""
    page: str = ""
    output: str = ""  # the student's stdout and stderr
    seconds: float = 0.0
    said: Message | None = None  # trouble / no verdict: what the one line says, as a message

    @property
    def exit_code(self) -> int:
        """0 matches, 1 differs, 2 anything else."""
        return {"match": 0, "differs": 1}.get(self.status, 2)

    @property
    def diagnosis(self) -> str:
        """The catalogue code of the mistake, or ``""``."""
        d = (self.doc or {}).get("diagnosis") or {}
        return str(d.get("code") or "")

    @property
    def where(self) -> str:
        """``file.py:LINE`` of the first divergence (or of the diagnosis' tensor), or ``""``."""
        doc = self.doc or {}
        for part in (doc.get("diagnosis") or {}, doc.get("first_divergence") or {}):
            if part.get("where"):
                return str(part["where"])
        return ""

    @property
    def stage(self) -> str:
        """The stage of the first divergence, or ``""``."""
        return str(((self.doc or {}).get("first_divergence") or {}).get("stage") or "")


def task(spec: str, opts: Options) -> sandbox.Task:
    """The child's task for ``spec`` (FILE absolute): :func:`run_job` with the options as JSON."""
    return sandbox.Task(
        "tracer.checking:run_job", {"spec": spec, "opts": asdict(opts)}, prepare="tracer.checking:imports"
    )


def imports() -> None:
    """Import what a check's child needs (torch among it) before its memory limit is set."""
    from tracer.compare.check import deadline, evidence, gather, run, student  # noqa: F401


def run_job(spec: str, opts: dict[str, Any]) -> dict[str, Any]:
    """:func:`job` as the child calls it: the options arrive as JSON."""
    return job(spec, Options(**opts))


def job(spec: str, opts: Options) -> dict[str, Any]:
    """The child's work: load the file and run the student's code; hand back its data, never a verdict.

    The answer is ``{"kind": "evidence", "evidence": …}`` (:mod:`tracer.compare.check.evidence`)
    or ``{"kind": "trouble", "message": …}`` when the code could not be loaded,
    built or run, its message as data (:meth:`~tracer.message.Message.to_json`),
    never a sentence; any failure is a message, never an exception.
    """
    from tracer.compare.check import deadline
    from tracer.compare.check.evidence import encode
    from tracer.compare.check.gather import gather
    from tracer.compare.check.run import spec_for
    from tracer.compare.check.student import load

    try:
        lesson = spec_for(opts.lesson, **opts.sizes, rope_style=opts.style, backward=opts.backward)
        obj, _ = load(spec, opts.timeout)
        with deadline.limit(opts.timeout, Message("trouble.check_of", name=spec.rpartition(":")[2])):
            ev = gather(obj, lesson)
        return {"kind": "evidence", "evidence": encode(ev)}
    except Exception as e:  # the student's crash, a refusal of ours, or a failure of ours: one line, exit 2
        return _trouble(e)


def judge(msg: dict[str, Any], full: str, opts: Options) -> dict[str, Any]:
    """The parent's work on a child's evidence: the verdict, its JSON, text and page, or why there is none.

    Runs in the process that never ran the student's code: the evidence is
    decoded and checked (:func:`~tracer.compare.check.evidence.decode`), the
    reference is computed here, and every output is rendered here.  The
    answer has the form :func:`job` used to send: ``verdict``, ``trouble``,
    or ``malformed`` (the data was not what a run of the check produces).
    """
    from tracer.compare.check.decode import decode
    from tracer.compare.check.evidence import Malformed
    from tracer.compare.check.run import judge as judge_run
    from tracer.compare.check.run import spec_for

    try:
        ev = decode(msg.get("evidence"))
        spec = spec_for(opts.lesson, **opts.sizes, rope_style=opts.style, backward=opts.backward)
        result = judge_run(ev, spec, full.rpartition(":")[0] or None)
        doc = result.to_json(opts.lang)
        text = result.explain(opts.lang, opts.verbose)
        page = ""
        if opts.fmt == "html":
            from tracer.present.checkpage import render_check

            page = render_check(result, opts.lang)
    except Malformed as e:
        return {"kind": "malformed", "message": str(e)}
    except Exception as e:  # a failure on this data: still one line, exit 2
        return _trouble(e)
    return {"kind": "verdict", "ok": bool(result.ok), "doc": doc, "text": text, "page": page}


def _trouble(e: Exception) -> dict[str, Any]:
    """The ``trouble`` message for an exception: the student's crash with its own traceback, ours with ours."""
    from tracer.compare.check.student import StudentError
    from tracer.errors import TracerError

    if isinstance(e, StudentError):
        return {"kind": "trouble", "message": e.message.to_json(), "details": e.details}
    if isinstance(e, TracerError):
        said = e.said or Message("trouble.plain", text=str(e))
    else:
        said = Message("trouble.check_failed_with", error=f"{type(e).__name__}: {e}")
    return {"kind": "trouble", "message": said.to_json(), "details": traceback.format_exc()}


def absolute(spec: str) -> str:
    """``FILE.py:NAME`` with FILE made absolute, so the child's own working folder does not move it."""
    where, sep, name = spec.rpartition(":")
    return f"{os.path.abspath(where)}{sep}{name}" if sep and where else spec


def warm(lesson: str, backward: bool = False) -> None:
    """Import, in the parent, what a child needs (each then starts in milliseconds) and what the parent judges with
    (``backward``: the references of ``check --backward``)."""
    from tracer.compare.check import decode, evidence, gather, lessons, reference, run  # noqa: F401  (the parent judges with these)
    from tracer.present import checkpage, checktext  # noqa: F401  (and renders with these)

    spec = lessons.SPECS.get(lesson)
    if spec is None:
        return
    if backward:  # the lesson's backward traces, with and without its dropout (check --backward)
        from tracer.compare.check import gradcheck, gradref

        with contextlib.suppress(Exception):
            for dropout in (False, True):
                gradref.references(gradcheck.backward_spec(spec), dropout)
        return
    # best effort: the book's roles do not fit every lesson (grouped-query keys are narrower); each child
    # builds the real reference and reports what fails there
    with contextlib.suppress(Exception):
        reference.reference(spec, _book_roles(spec)) if spec.is_class else reference.reference(spec, {})


def _book_roles(spec: Any) -> dict[str, Any]:
    import numpy as np

    from tracer.compare.check.model import Role

    w = np.zeros((spec.d_in, spec.d_out))
    return {r: Role(r, r, Message("how.none"), w) for r in ("W_query", "W_key", "W_value")}


def from_outcome(spec: str, out: sandbox.Outcome, full: str, opts: Options) -> Verdict:
    """The verdict on what a child sent: judged here from its evidence (a verdict it sends is not one).

    ``spec`` is ``FILE.py:NAME`` as the teacher gave it, ``full`` as the child
    loaded it (FILE absolute): messages name the file as given.
    """
    if out.verdict is not None and out.verdict.get("kind") == "evidence":
        out = replace(out, verdict=judge(out.verdict, full, opts))
    elif out.verdict is not None and out.verdict.get("kind") != "trouble":  # a child may send data or trouble
        out = replace(out, verdict={"kind": "malformed", "message": Message("no_verdict.own_verdict").to_json()})
    v = _verdict(spec, out)
    path, given = full.rpartition(":")[0], spec.rpartition(":")[0]
    if path and path != given and v.said is not None:
        v.said = v.said.replace(path, given)
        v.details = v.details.replace(path, given)
    if v.said is not None:  # in the reader's language; the student's own exception text stays as Python wrote it
        v.message = printable(_line(render(v.said, opts.lang)))
    return v


def _verdict(spec: str, out: sandbox.Outcome) -> Verdict:
    output = printable(out.output)
    msg = out.verdict
    name = spec.rpartition(":")[0] or spec
    if msg is None:
        said = Message("no_verdict.failed", name=name, why=out.failure or Message("trouble.check_failed"))
        return Verdict(spec, "no verdict", output=output, seconds=out.seconds, said=said)
    kind = msg.get("kind")
    if kind == "malformed":
        said = Message("no_verdict.malformed_data", name=name, why=_said(msg.get("message")))
        return Verdict(spec, "no verdict", output=output, seconds=out.seconds, said=said)
    if kind == "trouble":
        said = _said(msg.get("message"))
        if any(m in str(said) for m in OUT_OF_MEMORY):
            said = Message("trouble.out_of_memory", limit=out.memory, problem=said)
        details = str(msg.get("details") or "")
        return Verdict(spec, "trouble", details=details, output=output, seconds=out.seconds, said=said)
    doc = msg.get("doc")
    if kind != "verdict" or not isinstance(doc, dict) or not isinstance(msg.get("ok"), bool):
        said = Message("no_verdict.malformed_message")
        return Verdict(spec, "no verdict", output=output, seconds=out.seconds, said=said)
    status = "match" if msg["ok"] else "differs"
    return Verdict(
        spec,
        status,
        doc=doc,
        text=str(msg.get("text") or ""),
        page=str(msg.get("page") or ""),
        output=output,
        seconds=out.seconds,
    )


def check_file(spec: str, opts: Options) -> Verdict:
    """Check one ``FILE.py:NAME`` in a child process with the options' limits."""
    given, full = spec, absolute(spec)
    out = sandbox.run(task(full, opts), opts.timeout, opts.memory)
    return from_outcome(given, out, full, opts)


def _said(data: Any) -> Message:
    """A message the child (or :func:`judge`) sent as data; text (an older child's, or ours) stays as it is."""
    if isinstance(data, str) and data.strip():
        return Message("trouble.plain", text=data)
    try:
        said = Message.from_json(data)
        str(said)  # a key of the tables with every field its sentence needs
    except (ValueError, KeyError, IndexError):
        return Message("trouble.check_failed")
    return said


def _line(text: str) -> str:
    """The first line of a message (an exception's text may hold more)."""
    lines = text.strip().splitlines()
    return lines[0] if lines else text
