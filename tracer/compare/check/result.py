"""The verdict of a check: did the student's code match the lesson, and if not, where and why.

``CheckResult`` is what :func:`tracer.check` returns; its JSON form is
documented in ``docs/check.md`` (``schema`` / ``schema_version`` name it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tracer.compare.check.context import Hit
from tracer.compare.check.model import Divergence, Role, StageResult
from tracer.core import hooks
from tracer.core.trace import Trace
from tracer.message import Message, render

SCHEMA = "attn-trace-check"
SCHEMA_VERSION = 1


@dataclass
class CheckResult:
    """The outcome of checking one implementation against one lesson.

    ``ok`` is True when the student's run holds every quantity of the
    lesson; otherwise ``first_divergence`` says where it first goes wrong and
    ``diagnosis`` names the catalogue entry that explains it (or is None).
    ``student`` is the captured trace of the student's run: explain any of
    its steps (``first_divergence.student_step``) as a lesson's.
    Use it in a test as ``assert result.ok, result.explain("en")``.
    """

    lesson: str
    stages: list[StageResult]
    first_divergence: Divergence | None
    hit: Hit | None
    roles: list[Role]
    trace: Trace = field(repr=False)
    notes: list[str] = field(default_factory=list)
    name: str = ""  # what was checked, e.g. "attn.py:CausalAttention"
    student: Trace | None = field(default=None, repr=False)  # the student's run (eval mode), captured
    built: str = ""  # how the module was built: "CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.5)"
    heads: int = 0  # the number of heads checked (lessons multihead and gqa; 0 for the others)
    given: dict[str, str] = field(default_factory=dict)  # forward's parameters passed beyond the tokens -> kind
    backward: bool = False  # a hand-written backward pass was checked (check --backward)
    traces: dict[str, Trace] = field(default_factory=dict, repr=False)  # run -> its own reference, when it has one

    def reference(self, run: str) -> Trace:
        """The lesson's trace that run ``run`` is compared with (``check --backward``'s second upstream gradient
        has its own; every other run is compared with :attr:`trace`)."""
        return self.traces.get(run, self.trace)

    @property
    def ok(self) -> bool:
        """True when the code matches the lesson at every stage compared, and in its structure."""
        return self.first_divergence is None and self.hit is None

    @property
    def structure(self) -> str | None:
        """The code of a structural difference found outside the stage-by-stage comparison, or None.

        ``grouped_query`` (fewer key/value heads than query heads) and
        ``sizes_ignored`` (a second build with other sizes does not compute
        the lesson) have no first divergence: the module is not the lesson's
        computation at all, or only at the lesson's own sizes.
        """
        return self.hit.code if self.hit is not None and self.first_divergence is None else None

    @property
    def diagnosis(self) -> str | None:
        """The catalogue code of the mistake (``docs/check.md``), or None."""
        return self.hit.code if self.hit is not None else None

    @property
    def consequences(self) -> list[str]:
        """The stages after the first divergence that are wrong as a consequence (in lesson order, no repeats)."""
        return list(dict.fromkeys(s.quantity.stage for s in self.stages if s.status == "consequence"))

    def note(self, s: Any, code: str) -> str:
        """Note ``code`` in the language of ``s`` (a :class:`~tracer.present.strings.Strings`), its names filled."""
        from tracer.compare.check.forwardargs import named

        return str(s(f"check.note_{code}", ops=", ".join(self.opaque), given=named(self.given, code)))

    @property
    def opaque(self) -> list[str]:
        """The torch calls of the student's code that the capture recorded whole (opaque steps)."""
        return [str(op) for op in (self.student.meta.get("opaque") or [])] if self.student is not None else []

    @property
    def said(self) -> Message | None:
        """The diagnosis as a message (its sentence's key and arguments), or None."""
        from tracer.compare.check.catalogue import entry

        return None if self.hit is None else entry(self.hit.code, self.lesson).said(self.hit.detail)

    def sentence(self, lang: str = "en") -> str:
        """The diagnosis as one sentence in ``lang`` (empty when there is none)."""
        return "" if self.said is None else render(self.said, lang)

    def explain(self, lang: str = "en", verbose: bool = False) -> str:
        """The verdict as text: 'matches at every stage', or the first divergence, its diagnosis and consequences."""
        written: str = hooks.call("check_text", self, lang, verbose)  # tracer.present.checktext, registered above
        return written

    def to_json(self, lang: str = "en") -> dict[str, Any]:
        """The JSON document (``docs/check.md``)."""
        hit = self.hit
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "lesson": self.lesson,
            "name": self.name,
            "ok": self.ok,
            "roles": [{"role": r.role, "param": r.param, "how": render(r.how, lang)} for r in self.roles],
            "stages": [
                {
                    "quantity": s.quantity.key,
                    "stage": s.quantity.stage,
                    "step": s.quantity.step,
                    "run": s.quantity.run,
                    "status": s.status,
                    "student_tensor": s.evidence.id if s.evidence else None,
                    "where": s.evidence.where if s.evidence else "",
                    "note": s.note,
                }
                for s in self.stages
            ],
            "first_divergence": self.first_divergence.to_json() if self.first_divergence else None,
            "diagnosis": None
            if hit is None
            else {
                "code": hit.code,
                "sentence": self.sentence(lang),
                "steps": list(hit.steps),
                "student_tensor": hit.seen.id if hit.seen else None,
                "where": hit.seen.where if hit.seen else hit.where,
            },
            "structure": self.structure,
            "built": self.built or None,
            "heads": self.heads or None,
            "given": dict(self.given) or None,
            "backward": self.backward,
            "consequences": self.consequences,
            "notes": list(self.notes),
            "opaque": self.opaque,
        }

    def dumps(self, lang: str = "en") -> str:
        """The JSON document as text (sorted keys, two-space indent, final newline)."""
        return json.dumps(self.to_json(lang), ensure_ascii=False, indent=2, sort_keys=True) + "\n"
