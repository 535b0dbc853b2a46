"""A check's verdicts written out: one submission, or a class, as text, JSON, CSV, Gradescope results or HTML.

Everything a student controls (file names, names, messages, printed
output) is untrusted here: text loses its control characters
(:func:`tracer.textsafe.printable`), CSV cells that would start a formula
are quoted (:func:`tracer.textsafe.cell`), HTML is escaped
(:func:`html.escape`), JSON is :mod:`json`'s.  Gradescope's ``results.json``
has one test per stage of the lesson, with the points of
:mod:`tracer.grading` (the stages before the first divergence earn theirs,
the later ones say why they could not be credited), or, when the check
could not run, one failed test that says why; the CSV one column per stage.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tracer import grading
from tracer.checking import Verdict
from tracer.core.fmt import printable as one_line
from tracer.grading import DEFAULT, Points
from tracer.present.strings import Strings
from tracer.textsafe import cell, printable

CLASS_SCHEMA = "attn-trace-check-class"


def single(v: Verdict, fmt: str, points: Points = DEFAULT) -> str:
    """One submission's verdict in ``fmt`` (``text``, ``json``, ``html``, ``csv``, ``gradescope``)."""
    if fmt == "json":
        return dumps(v.doc)
    if fmt == "html":
        return v.page
    if fmt == "csv":
        return table([v])
    if fmt == "gradescope":
        return dumps(gradescope(v, points))
    return printable(v.text)


def dumps(doc: Any) -> str:
    """JSON as the check writes it: sorted keys, two-space indent, final newline."""
    return json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def gradescope(v: Verdict, points: Points = DEFAULT) -> dict[str, Any]:
    """Gradescope's ``results.json`` for one submission: one test per stage of the lesson (:mod:`tracer.grading`)."""
    if v.doc is None:
        test = {
            "name": "check",
            "score": 0,
            "max_score": points.default,
            "output": printable(v.message),
            "visibility": points.visibility,
            "status": "failed",
        }
        return {
            "score": 0,
            "output": printable(v.message),
            "tests": [test],
            "stdout_visibility": points.stdout_visibility,
        }
    tests = grading.tests(v.doc, points)
    diag = (v.doc.get("diagnosis") or {}).get("sentence") or ""
    summary = "matches the lesson at every stage" if v.status == "match" else f"differs: {diag}".strip()
    return {
        "score": sum(t["score"] for t in tests),
        "output": printable(summary),
        "tests": tests,
        "stdout_visibility": points.stdout_visibility,
    }


def line(v: Verdict, label: str, lang: str = "en") -> str:
    """One student's line of the class summary: verdict, diagnosis, line (in ``lang``; codes stay codes).

    One line whatever the student chose: a newline or a control character in
    a file's name or a message is written as its escape (``\\n``), so a file
    named ``"a\\nalice.py: match"`` cannot print a verdict line of its own.
    """
    s = Strings(lang)
    word = s(f"class.status_{v.status.replace(' ', '_')}")
    if v.status in ("match", "differs"):
        parts = [word]
        if v.status == "differs":
            parts.append(v.diagnosis or s("class.no_diagnosis", stage=v.stage))
            if v.where:
                parts.append(s("class.at", where=v.where))
        return one_line(f"{label}: {' '.join(parts)}")
    said = v.message if v.message.startswith((v.status, word)) else s("class.said", status=word, message=v.message)
    return one_line(f"{label}: {said}")


def summary(verdicts: Sequence[tuple[str, Verdict]]) -> dict[str, Any]:
    """How many match, differ, had trouble or sent no verdict, and the most common mistakes."""
    statuses = Counter(v.status for _, v in verdicts)
    mistakes = Counter(v.diagnosis or "no diagnosis" for _, v in verdicts if v.status == "differs")
    return {
        "submissions": len(verdicts),
        "match": statuses["match"],
        "differs": statuses["differs"],
        "trouble": statuses["trouble"],
        "no_verdict": statuses["no verdict"],
        "mistakes": [{"code": c, "count": n} for c, n in sorted(mistakes.items(), key=lambda x: (-x[1], x[0]))],
    }


def summary_text(verdicts: Sequence[tuple[str, Verdict]], lang: str = "en") -> str:
    """The class summary as text lines, in ``lang`` (the mistakes' codes stay as they are)."""
    s, got = Strings(lang), summary(verdicts)
    counts = {k: got[k] for k in ("match", "differs", "trouble", "no_verdict")}
    lines = [s("class.summary", n=got["submissions"], **counts)]
    if got["mistakes"]:
        listed = s("capture.comma").join(f"{m['code']} ({m['count']})" for m in got["mistakes"][:5])
        lines.append(s("class.common", mistakes=listed))
    return "\n".join(lines) + "\n"


def class_text(verdicts: Sequence[tuple[str, Verdict]], lang: str = "en") -> str:
    """One line per student, then the summary."""
    return "".join(line(v, label, lang) + "\n" for label, v in verdicts) + "\n" + summary_text(verdicts, lang)


def class_json(lesson: str, verdicts: Sequence[tuple[str, Verdict]]) -> str:
    """The class as one JSON document (each check's own document under ``check``)."""
    doc = {
        "schema": CLASS_SCHEMA,
        "schema_version": 1,
        "lesson": lesson,
        "submissions": [
            {
                "file": label,
                "status": v.status,
                "diagnosis": v.diagnosis or None,
                "stage": v.stage or None,
                "where": v.where or None,
                "message": printable(v.message) or None,
                "check": v.doc,
            }
            for label, v in verdicts
        ],
        "summary": summary(verdicts),
    }
    return dumps(doc)


def table(verdicts: Sequence[Verdict], labels: Sequence[str] | None = None) -> str:
    """The verdicts as CSV: file, status, diagnosis, stage, line, message, then one column per stage of the lesson.

    A stage's cell is ``1`` when the stage earns its credit, ``0`` when it
    does not (:func:`tracer.grading.stage_marks`), empty when the check did not run.
    """
    marks = [dict((st, ok) for st, ok, _ in grading.stage_marks(v.doc)) if v.doc else {} for v in verdicts]
    stages = list(dict.fromkeys(st for m in marks for st in m))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["file", "status", "diagnosis", "stage", "where", "message", *(f"stage:{st}" for st in stages)])
    for n, v in enumerate(verdicts):
        label = labels[n] if labels is not None else v.spec
        credit = ["" if st not in marks[n] else str(int(marks[n][st])) for st in stages]
        w.writerow([cell(x) for x in (label, v.status, v.diagnosis, v.stage, v.where, v.message, *credit)])
    return buf.getvalue()


def class_gradescope(verdicts: Sequence[tuple[str, Verdict]], points: Points = DEFAULT) -> str:
    """One ``results.json`` per student, under ``students`` by file name."""
    return dumps({"students": {label: gradescope(v, points) for label, v in verdicts}})
