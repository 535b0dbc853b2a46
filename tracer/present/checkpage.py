"""A check's verdict as one self-contained HTML page: the student's values beside the lesson's, stage by stage.

The page uses the reports' stylesheet, renderer (:mod:`tracer.present.render`)
and Content-Security-Policy (nothing remote; it carries no script at all).
Each quantity of the lesson is a card with its formula, the lesson's values
and the student's (the first entries of any batch or head axis), differing
cells marked; the first divergence is highlighted at the top and on its card.
Every name from the student's code is escaped by the template.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tracer.core.fmt import num
from tracer.present import messages
from tracer.present.checktext import formula, no_roles, run_label, stage_name, status_name, tensor_name
from tracer.present.explain import equation
from tracer.present.render.env import render
from tracer.present.render.html import ROOT, asset, csp
from tracer.present.strings import Strings, html_lang

if TYPE_CHECKING:
    from tracer.compare.check.model import StageResult
    from tracer.compare.check.result import CheckResult

SCRIPT = ""  # the page needs no script; the policy still names the (empty) one it allows


@dataclass(frozen=True)
class Grid:
    """A 2-D slice of values as table rows of (text, css class) cells."""

    caption: str
    rows: list[list[tuple[str, str]]]


@dataclass(frozen=True)
class Card:
    """One quantity of the lesson: its formula, the lesson's values and the student's."""

    anchor: str
    stage: str
    step: str
    latex: str
    status: str
    status_text: str
    run: str
    first: bool
    lesson: Grid
    yours: Grid | None
    origin: str
    note: str
    none: str = ""  # why there is no table of the student's values


def _slice(a: np.ndarray) -> tuple[np.ndarray, str]:
    lead = a.ndim - 2
    if lead <= 0:
        return (a.reshape(1, -1) if a.ndim == 1 else a), ""
    return a[(0,) * lead], "[" + ", ".join("1" for _ in range(lead)) + ", …]"


def _grid(values: np.ndarray, caption: str, bad: np.ndarray | None) -> Grid:
    rows = []
    for i, row in enumerate(values):
        rows.append([(num(v), "bad" if bad is not None and bad[i, j] else "") for j, v in enumerate(row)])
    return Grid(caption, rows)


def card(r: CheckResult, s: Strings, x: StageResult, n: int) -> Card:
    """The card of one quantity."""
    from tracer.compare.check.align import ATOL, RTOL

    q = x.quantity
    node = r.reference(q.run).node(q.step)
    ref = np.asarray(node.value, dtype=np.float64)
    spec_short = q.run == "short"
    m = x.match or (x.nearest if x.status in ("differs", "consequence") else None)  # skipped: no tensor of theirs
    got = m.view() if m is not None else None
    if spec_short and got is not None:
        cut = tuple(slice(0, got.shape[d]) for d in range(got.ndim))
        ref = ref[cut]
    lesson, where = _slice(ref)
    yours = None
    if got is not None and got.shape == ref.shape:
        mine, _ = _slice(got)
        bad = ~np.isclose(mine, lesson, rtol=RTOL, atol=ATOL, equal_nan=True)
        yours = _grid(mine, f"{s('check.col_yours')} {where}".strip(), bad)
    d = r.first_divergence
    first = d is not None and d.quantity == q.key and d.run == q.run
    origin = ""
    if m is not None:
        origin = tensor_name(s, m.seen.id) + (f" @ {m.seen.where}" if m.seen.where else "")
    return Card(
        anchor=f"q{n}",
        stage=stage_name(s, q.stage, r.lesson),
        step=q.step,
        latex=r.reference(q.run)[q.step].latex,
        status=x.status.replace(" ", "-"),
        status_text=status_name(s, x.status),
        run=run_label(s, r, q.run) if q.run != "eval" else "",
        first=first,
        lesson=_grid(lesson, f"{s('check.col_lesson')} {where}".strip(), None),
        yours=yours,
        origin=origin,
        note=s(f"check.note_{x.note}") if x.note else "",
        none="" if yours is not None else s("check.card_none_skipped" if x.status == "skipped" else "check.card_none"),
    )


def context(r: CheckResult, lang: str) -> dict[str, Any]:
    """Everything the template shows, prepared (and formatted) in Python."""
    s = Strings(lang)
    d = r.first_divergence
    verdict: dict[str, Any] = {"ok": r.ok, "structure": ""}
    if r.ok:
        verdict["headline"] = s("check.ok", n=sum(1 for x in r.stages if x.status == "match"))
    elif d is None and r.hit is not None:  # a difference of structure: no stage to show
        verdict["headline"] = s("check.differs_structure")
        verdict["structure"] = f"[{r.hit.code}] {r.sentence(lang)}"
    else:
        assert d is not None
        verdict["headline"] = s(
            "check.differs", stage=stage_name(s, d.stage, r.lesson), quantity=d.quantity, step=d.step
        )
        ref = r.reference(d.run)
        verdict["equation"] = formula(s, equation(ref, ref[d.element], s=s))
        if d.note == "shared":
            verdict["yours"] = s("check.your_shared")
        elif d.note.startswith("grad_"):  # check --backward: what was returned instead, or what it implies
            made = f"  ({s('check.made_at', id=d.student_id, where=d.where)})" if d.student_id and d.where else ""
            verdict["yours"] = s(f"check.your_{d.note}", **d.detail) + made
        elif d.note and d.run.startswith("call:"):  # lesson kvcache: a call of the generation raised
            verdict["yours"] = s("check.raised_call", error=d.note)
        elif d.note:
            verdict["yours"] = s("check.raised", n=_short(r), error=d.note)
        elif d.student is None:
            verdict["yours"] = s("check.your_none")
        else:
            said = f"{d.element} = {num(d.student)}"
            if d.student_step is not None and r.student is not None:
                said = formula(s, equation(r.student, r.student[d.student_step], s=s))
            shown = tensor_name(s, d.student_id)
            verdict["yours"] = said + (f"  ({s('check.made_at', id=shown, where=d.where)})" if d.where else "")
        verdict["run"] = run_label(s, r, d.run) if d.run != "eval" else ""
        verdict["diagnosis"] = f"[{r.hit.code}] {r.sentence(lang)}" if r.hit else s("check.no_diagnosis")
        verdict["steps"] = ", ".join(r.hit.steps) if r.hit else ""
        verdict["consequences"] = ", ".join(stage_name(s, c, r.lesson) for c in r.consequences) or s("check.none")
    roles = [
        s("check.role_line", role=x.role, param=x.param, how=messages.render(x.how, lang))
        for x in r.roles
        if "_other" not in x.role
    ]
    return {
        "lang": lang,
        "html_lang": html_lang(lang),
        "title": s("check.page_title", lesson=r.lesson),
        "subtitle": s("check.title", name=r.name or "?", lesson=r.lesson),
        "heads": s("check.heads", n=r.heads) if r.heads else "",
        "roles_head": s("check.roles") if roles else no_roles(s, "backward" if r.backward else r.lesson),
        "roles": roles,
        "verdict": verdict,
        "cards": [card(r, s, x, n) for n, x in enumerate(r.stages, 1)],
        "notes": [r.note(s, n) for n in r.notes],
    }


def render_check(r: CheckResult, lang: str = "en") -> str:
    """The whole page as HTML text."""
    s = Strings(lang)
    return render("check.html.j2", s, root=ROOT, css=asset("report.css"), csp=csp(SCRIPT), **context(r, lang))


def _short(r: CheckResult) -> int:
    from tracer.compare.check.lessons import SPECS

    return SPECS[r.lesson].short
