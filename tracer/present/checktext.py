"""A check's verdict as text, in English or Chinese (what ``attn-trace check`` prints).

The first divergence is written as ``explain`` writes a step: the lesson's
formula with its numbers, then the student's value at the same place and the
tensor and line it came from; then the diagnosis sentence, the stages that go
wrong as a consequence, and every quantity with its result.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tracer.core.fmt import num
from tracer.present.explain import equation
from tracer.present.messages import LESSON, lesson_table, render
from tracer.present.strings import Strings
from tracer.present.termtext import fit, pad

if TYPE_CHECKING:
    from tracer.compare.check.result import CheckResult

ZH_FORMULA: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r" unless (.+?), then -inf"), lambda m: f"（当 {m.group(1).replace(' or ', ' 或 ')} 时为 -inf）"),
    (re.compile(r"head outputs side by side: "), "各头的输出并排："),
)
"""The English words left in the lessons' formulas (a mask's rule, the heads' concatenation), as Chinese.

They are the pipelines' node texts, recorded in the trace; keying them means recording the rule as
structure (a masked entry's own words are keys already: ``explain.entry_masked``, ``explain.entry_kept``)."""


def formula(s: Strings, text: str) -> str:
    """An equation of :func:`~tracer.present.explain.equation` in the strings' language (code stays code)."""
    if s.lang == "zh":
        for pattern, said in ZH_FORMULA:
            text = pattern.sub(said, text)
    return text


def tensor_name(s: Strings, name: str | None) -> str:
    """A student tensor's id as shown: ``output`` (what the code returned) in the strings' language."""
    return s("check.returned") if name == "output" else str(name)


MARK = {"match": "✓", "differs": "✗", "skipped": "·", "consequence": "✗", "not compared": "–"}


def stage_name(s: Strings, stage: str, lesson: str) -> str:
    """A check stage's name in the strings' language: lesson ``lesson``'s own word for it, else the package's.

    A lesson may compare a stage the built-in lessons do not have (lesson
    ``temperature``'s cooled scores): its message table names it under
    ``stage.<stage>``; every other stage is ``check.stage_<stage>``.
    """
    own = lesson_table(lesson, s.lang).get(f"{LESSON}{lesson}.stage.{stage}")
    return own if own is not None else s(f"check.stage_{stage}")


def run_label(s: Strings, r: CheckResult, run: str) -> str:
    """How the student's code was run for a quantity (eval, training mode, shorter sequence)."""
    from tracer.compare.check.lessons import SPECS

    spec = SPECS[r.lesson]
    if run == "train":
        return s("check.run_train", p=spec.dropout, seed=spec.seed)
    if run == "short":
        return s("check.run_short", n=spec.short)
    if run == "block":
        return s("check.run_block", b=spec.block)
    if run == "upstream":  # check --backward: the second upstream gradient
        return s("check.run_upstream")
    if run == "wide" and spec.gradients is not None:  # check --backward: the lesson at other sizes
        return s("check.run_wide", d=int(r.reference(run).tensor(spec.gradients.q).shape[-1]))
    if run.startswith("call:"):  # lesson kvcache: one call of the generation, "call:3-4"
        a, _, b = run[5:].partition("-")
        return s("check.run_call_one", a=a) if a == b else s("check.run_call", a=a, b=b)
    return s("check.run_eval")


def status_name(s: Strings, status: str) -> str:
    """A quantity's result in words."""
    return s(f"check.status_{status.replace(' ', '_')}")


def no_roles(s: Strings, lesson: str) -> str:
    """What a function without weights is given: the lesson's own sentence ``check.no_roles_<lesson>``, if any.

    Most lessons hand a student's function the inputs as they are; a lesson
    that hands it something else (flash: the lesson's queries, keys and
    values) says so under its own key, and the string tables are where that
    is written, not this code.
    """
    own = f"check.no_roles_{lesson}"
    return s(own if own in s.entries else "check.no_roles")


def role_lines(s: Strings, r: CheckResult) -> list[str]:
    """One line per weight role: which of the student's parameters plays it."""
    if not r.roles:
        return [no_roles(s, "backward" if r.backward else r.lesson)]
    shown = [x for x in r.roles if not x.role.endswith("_other")]
    lines = [s("check.role_line", role=x.role, param=x.param, how=render(x.how, s.lang)) for x in shown]
    return [s("check.roles")] + [f"  {line}" for line in lines]


def divergence_lines(s: Strings, r: CheckResult, decimals: int = 4) -> list[str]:
    """The first divergence: lesson equation, the student's value, where it came from."""
    d = r.first_divergence
    assert d is not None
    lines = [s("check.differs", stage=stage_name(s, d.stage, r.lesson), quantity=d.quantity, step=d.step)]
    if d.run != "eval":
        lines.append(f"  ({run_label(s, r, d.run)})")
    ref = r.reference(d.run)
    lines.append(f"  {s('check.lesson_value')}: {formula(s, equation(ref, ref[d.element], decimals, s))}")
    if d.note == "shared":
        lines.append(f"  {s('check.your_value')}: {s('check.your_shared')}")
    elif d.note.startswith("grad_"):  # check --backward: what was returned instead, or what it implies
        made = f"  ({s('check.made_at', id=d.student_id, where=d.where)})" if d.student_id and d.where else ""
        lines.append(f"  {s('check.your_value')}: {s(f'check.your_{d.note}', **d.detail)}{made}")
    elif d.note and d.run.startswith("call:"):
        lines.append(f"  {s('check.your_value')}: {s('check.raised_call', error=d.note)}")
    elif d.note:
        lines.append(f"  {s('check.your_value')}: {s('check.raised', n=_short(r), error=d.note)}")
    elif d.student is None:
        lines.append(f"  {s('check.your_value')}: {s('check.your_none')}")
    else:
        shown = tensor_name(s, d.student_id)
        origin = s("check.made_at", id=shown, where=d.where) if d.where else s("check.made", id=shown)
        if d.student_step is not None and r.student is not None:
            said = formula(s, equation(r.student, r.student[d.student_step], decimals, s))
        else:
            said = f"{d.element} = {num(d.student, decimals)}"
        lines.append(f"  {s('check.your_value')}: {said}  ({origin})")
    return lines


def text(r: CheckResult, lang: str = "en", verbose: bool = False) -> str:
    """The whole verdict, ending with a newline."""
    s = Strings(lang)
    if r.structure is not None:  # another computation than the lesson's: no weights, no stages to list
        head = [s("check.title", name=r.name or "?", lesson=r.lesson), s("check.differs_structure")]
        return fit("\n".join([*head, f"  {s('check.diagnosis')} [{r.structure}]: {r.sentence(lang)}"])) + "\n"
    built = [s("check.built", call=r.built)] if r.built else []
    built += [s("check.heads", n=r.heads)] if r.heads else []
    out = [s("check.title", name=r.name or "?", lesson=r.lesson), *built, *role_lines(s, r), ""]
    if r.ok:
        out.append(s("check.ok", n=sum(1 for x in r.stages if x.status == "match")))
    else:
        out += divergence_lines(s, r)
        if r.hit is not None:
            out.append(f"  {s('check.diagnosis')} [{r.hit.code}]: {r.sentence(lang)}")
            out.append(f"  {s('check.steps')}: {', '.join(r.hit.steps)}")
        else:
            out.append(f"  {s('check.diagnosis')}: {s('check.no_diagnosis')}")
        later = ", ".join(stage_name(s, x, r.lesson) for x in r.consequences) or s("check.none")
        out.append(f"  {s('check.consequence')}: {later}")
    out += ["", s("check.stages")]
    for x in r.stages:
        q = x.quantity
        m = x.match or (x.nearest if verbose else None)
        tail = f"  ← {tensor_name(s, m.seen.id)}{' @ ' + m.seen.where if m.seen.where else ''}" if m is not None else ""
        said = s(f"check.note_{x.note}") if x.note else ""
        extra = f"  ({said})" if said else ""
        run = f" [{run_label(s, r, q.run)}]" if q.run != "eval" else ""
        name = pad(stage_name(s, q.stage, r.lesson), 18)  # in terminal columns: a Chinese name's characters take two
        out.append(f"  {MARK[x.status]} {name} {q.step:<20} {status_name(s, x.status)}{run}{tail}{extra}")
    for note in r.notes:
        out.append(r.note(s, note))
    return fit("\n".join(out)) + "\n"  # 80 columns, broken between terms and words, never inside a number


def _short(r: CheckResult) -> int:
    from tracer.compare.check.lessons import SPECS

    return SPECS[r.lesson].short
