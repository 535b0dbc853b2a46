"""Every node names its entries with a stored symbol; pages name an entry by it, never by cutting its formula.

The expected symbols and definitions are written out here as literals.  The
view tests edit a trace file the way anyone can (a formula with another
``=`` inside a group, a formula with none, a formula that does not start
with its symbol) and check what the page's equation and headers then say.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

import tracer
from tests.hostile import seal
from tracer.core import formula, serialize
from tracer.core.trace import ELEMENT, Trace
from tracer.errors import TraceFormatError
from tracer.lessons.simple import context, scores
from tracer.lessons.simple.weights import symbol as column_symbol
from tracer.present.strings import Strings
from tracer.present.views import nodes, worked
from tracer.present.views.common import Ctx
from tracer.present.views.lessonctx import LessonCtx

LESSONS = ("simple", "trainable", "causal", "multihead")


@cache
def lesson(name: str) -> Trace:
    return tracer.trace_lesson(name)


def doc_of(trace: Trace) -> dict[str, Any]:
    """The trace's file document (with its digest)."""
    doc: dict[str, Any] = json.loads(serialize.dumps(trace))
    return doc


def edited(trace: Trace, **latex: str) -> Trace:
    """``trace`` written to a file whose nodes' formulas were edited (node name -> new formula), digest recomputed."""
    doc = doc_of(trace)
    for node in doc["nodes"]:
        if node["name"] in latex:
            node["latex"] = latex[node["name"]]
    return serialize.loads(seal(doc))


# -- the recorded symbols ---------------------------------------------------------
@pytest.mark.parametrize("name", LESSONS)
def test_every_formula_is_its_symbol_or_starts_with_it(name: str) -> None:
    for node in lesson(name).nodes:
        if node.granularity != ELEMENT:
            assert node.symbol == "", node.name  # a tensor-level step names no entry
            continue
        assert node.symbol, node.name
        assert node.latex == node.symbol or node.latex.startswith(node.symbol + " = "), (node.name, node.symbol)


def test_symbols_and_definitions_of_the_tutorial() -> None:
    t = lesson("simple")
    omega = t["omega[2,1]"]
    assert omega.symbol == r"\omega_{21}"
    assert omega.definition == (r"x^{(2)} \cdot x^{(1)}", r"\sum_{k} x^{(2)}_{k}\, x^{(1)}_{k}")
    assert t["omega[2,1].p[3]"].symbol == r"x^{(2)}_{3}\, x^{(1)}_{3}" and t["omega[2,1].p[3]"].definition == ()
    assert t["naive.exp[2,3]"].symbol == r"e^{\omega_{23}}" and t["naive.exp[2,3]"].definition == ()
    assert t["alpha[2]"].symbol == r"\alpha_{2j}"  # a row: the key index stays a letter
    assert t["stable.shift[2,3]"].symbol == r"\omega_{23} - m_{2}"
    assert t["alpha_sum[2]"].symbol == r"\sum_{j} \alpha_{2j}"
    assert t["z[2,1]"].definition == (r"\sum_{j} \alpha_{2j}\, x^{(j)}_{1}",)
    assert t["mat.omega"].symbol == "" and t["mat.omega"].definition == (r"\Omega = X X^{\top}",)


def test_symbols_of_the_lessons() -> None:
    assert lesson("trainable")["q[2,1]"].symbol == r"q^{(2)}_{1}"
    assert lesson("trainable")["stable.shift[2,3]"].symbol == r"\tilde\omega_{23} - m_{2}"
    assert lesson("causal")["dropout.alpha[2,1]"].symbol == r"\alpha^{\mathrm{drop}}_{21}"
    assert lesson("multihead")["split.out[1,2,1]"].definition == (r"o^{(2)}_{1} + b_{1}",)
    assert lesson("multihead").node("split.hq").symbol == ""


# -- reading a formula ------------------------------------------------------------
@pytest.mark.parametrize(
    ("latex", "symbol", "steps"),
    [
        (r"\omega_{21} = a = b", r"\omega_{21}", ("a", "b")),
        (r"\omega_{21} = \sum_{k = 1}^{3} x_k", r"\omega_{21}", (r"\sum_{k = 1}^{3} x_k",)),
        (r"s = \text{a = b} + c", "s", (r"\text{a = b} + c",)),
        (r"m = \begin{cases} a = b \\ c \end{cases}", "m", (r"\begin{cases} a = b \\ c \end{cases}",)),
        (r"s = \{ a \} = b", "s", (r"\{ a \}", "b")),
        (r"f = \left\{ a = 1 \right. = g", "f", (r"\left\{ a = 1 \right.", "g")),  # an escaped brace opens nothing
        (r"f = \left( a = b \right) = c", "f", (r"\left( a = b \right)", "c")),
        (r"f = a \leftarrow b = c \rightarrow d", "f", (r"a \leftarrow b", r"c \rightarrow d")),  # arrows group nothing
        (r"e^{\omega_{21}}", r"e^{\omega_{21}}", ()),
        (r"x \cdot y", r"\omega_{21}", (r"x \cdot y",)),  # a formula about something else: one step
        (r"x = y", "", (r"x = y",)),
        ("", "s", ()),
    ],
)
def test_definition(latex: str, symbol: str, steps: tuple[str, ...]) -> None:
    assert formula.definition(latex, symbol) == steps


def test_stated_symbol() -> None:
    assert formula.stated_symbol(r"\omega_{<i,j>} = x \cdot y = z", True) == r"\omega_{<i,j>}"
    assert formula.stated_symbol(r"\sum_{m = 1}^{<j>} \omega_{<i,m>}", True) == r"\sum_{m = 1}^{<j>} \omega_{<i,m>}"
    assert formula.stated_symbol(r"Q = X W", False) == ""
    assert formula.stated_symbol("", True) == ""


# -- the pages ---------------------------------------------------------------------
def rhs(eq: Any) -> list[str]:
    """The steps of a worked equation, each as its chunks joined."""
    return [" ".join(step) for step in eq.rhs]


def test_a_dot_product_whose_formula_has_an_equals_sign_inside_a_group() -> None:
    t = edited(lesson("simple"), omega=r"\omega_{<i,j>} = \sum_{k = 1}^{3} x^{(<i>)}_{k}\, x^{(<j>)}_{k}")
    eq = scores.dot(Ctx(t, Strings("en"), 4), 2, 1, True)
    assert eq.lhs == r"\omega_{21}"
    assert rhs(eq)[0] == r"= \sum_{k = 1}^{3} x^{(2)}_{k}\, x^{(1)}_{k}"  # whole: a cut at "=" left "\sum_{k"
    assert rhs(eq)[-1] == "= 0.9544"


def test_a_dot_product_whose_formula_has_no_equals_sign() -> None:
    t = edited(lesson("simple"), omega=r"x^{(<i>)} \cdot x^{(<j>)}")
    eq = scores.dot(Ctx(t, Strings("en"), 4), 2, 1, True)
    assert eq.lhs == r"\omega_{21}"  # the entry, not its formula
    assert rhs(eq)[0] == r"= x^{(2)} \cdot x^{(1)}"
    assert rhs(eq)[-1] == "= 0.9544"


def test_the_tutorial_dot_product_writes_the_first_step_of_its_definition() -> None:
    eq = scores.dot(Ctx(lesson("simple"), Strings("en"), 4), 2, 1, True)
    assert eq.lhs == r"\omega_{21}" and rhs(eq)[0] == r"= x^{(2)} \cdot x^{(1)}" and rhs(eq)[-1] == "= 0.9544"
    assert not any(r"\sum" in step for step in rhs(eq))


def test_a_context_component_whose_formula_does_not_name_it() -> None:
    t = edited(lesson("simple"), z=r"\sum_{j} \alpha_{<i>j}\, x^{(j)}_{<k>}")
    eq = next(b for b in context.context(Ctx(t, Strings("en"), 4)).blocks if getattr(b, "step", "") == "z[2,1]")
    assert eq.lhs == r"z^{(2)}_{1}"
    assert rhs(eq)[0] == r"= \sum_{j} \alpha_{2j}\, x^{(j)}_{1}"
    assert rhs(eq)[-1] == "= 0.4419"


def test_normalization_headers_are_the_rows_symbols() -> None:
    ctx = Ctx(lesson("simple"), Strings("en"), 4)
    assert column_symbol(ctx, "stable.shift") == r"\omega_{2j} - m_{2}"
    t = edited(lesson("simple"), alpha=r"\frac{e^{\omega_{<i,j>} - m_{<i>}}}{E'_{<i>}}")
    assert column_symbol(Ctx(t, Strings("en"), 4), "alpha") == r"\alpha_{2j}"  # not the formula


def test_lesson_headers_and_worked_equations_use_the_symbol() -> None:
    t = edited(lesson("trainable"), alpha=r"\frac{e^{\tilde\omega_{<i,j>} - m_{<i>}}}{E_{<i>}}")
    assert nodes.symbol(t.node("alpha")) == r"\alpha_{<i,j>}"
    assert nodes.header(t.node("alpha"), "j", 2).text == r"\alpha_{i3}"
    assert nodes.symbol(t.node("mat.q")) == ""  # a whole matrix: columns are numbered
    eq = worked.equation(LessonCtx(t, Strings("en"), 4), t["alpha[2,1]"])
    assert eq.lhs == r"\alpha_{21}"
    assert rhs(eq)[0] == r"= \frac{e^{\tilde\omega_{21} - m_{2}}}{E_{2}}"


def test_a_worked_equation_of_an_entry_its_formula_defines() -> None:
    t = lesson("trainable")
    eq = worked.equation(LessonCtx(t, Strings("en"), 4), t["stable.exp[2,1]"])
    assert eq.lhs == r"e^{\tilde\omega_{21} - m_{2}}"
    assert not any(step.startswith(r"= e^{\tilde") for step in rhs(eq))  # the symbol is not repeated as a step


# -- trace files ------------------------------------------------------------------
def test_a_file_keeps_every_symbol() -> None:
    t = lesson("causal")
    back = serialize.loads(serialize.dumps(t))
    assert [n.symbol for n in back.nodes] == [n.symbol for n in t.nodes]
    assert doc_of(t)["version"] == 3


@pytest.mark.parametrize("name", LESSONS)
def test_a_version_2_file_reads_the_same_symbols(name: str) -> None:
    """A file written before symbols were stored: each is read from its formula once, as pages used to."""
    doc = doc_of(lesson(name))
    doc["version"] = 2
    for node in doc["nodes"]:
        del node["symbol"]
    old = serialize.loads(seal(doc))
    assert [n.symbol for n in old.nodes] == [n.symbol for n in lesson(name).nodes]
    assert tracer.diff(old, lesson(name)).equal


def test_a_version_3_file_without_a_symbol_is_refused() -> None:
    doc = doc_of(lesson("simple"))
    del doc["nodes"][3]["symbol"]
    with pytest.raises(TraceFormatError, match=r"\$\.nodes\[3\].*'symbol' is a required property"):
        serialize.loads(seal(doc))


def test_a_symbol_must_be_text() -> None:
    doc = doc_of(lesson("simple"))
    doc["nodes"][3]["symbol"] = ["\\omega"]
    with pytest.raises(TraceFormatError, match=r"\$\.nodes\[3\]\.symbol"):
        serialize.loads(seal(doc))


def test_a_changed_symbol_is_a_difference() -> None:
    doc = doc_of(lesson("simple"))
    omega = next(n for n in doc["nodes"] if n["name"] == "omega")
    omega["symbol"] = r"\Omega_{<i,j>}"
    result = tracer.diff(lesson("simple"), serialize.loads(seal(doc)))
    assert [(c.subject, c.field) for c in result.nodes] == [("omega", "symbol")]
