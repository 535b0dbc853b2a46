"""The trace model: ids, look-ups, slices, iteration and provenance."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import tracer
from tracer.core import ids
from tracer.errors import StepNotFound


def test_headline_ids(tutorial: tracer.Trace) -> None:
    s = tutorial["omega[2,1]"]
    assert (s.id, s.op, s.stage) == ("omega[2,1]", "sum", "scores")
    assert s.inputs == ("omega[2,1].p[1]", "omega[2,1].p[2]", "omega[2,1].p[3]")
    assert s.latex.startswith(r"\omega_{21} = x^{(2)} \cdot x^{(1)}")
    a = tutorial["alpha[2,1]"]
    assert a.inputs == ("stable.exp[2,1]", "stable.sum[2]")
    z = tutorial["z[2]"]
    assert not z.is_element and z.value.shape == (3,)
    assert tutorial["z[2].t[1,3]"].inputs == ("alpha[2,1]", "x[1,3]")


def test_every_step_explains_back_to_the_inputs(tutorial: tracer.Trace) -> None:
    """Recording order is a topological order: every input of a step was recorded before it."""
    seen: set[str] = set()
    count = 0
    for step in tutorial:
        for dep in step.inputs:
            d = tutorial[dep]
            dep_steps = {d.id} if d.node.granularity == "tensor" else {s.id for s in tutorial.expand(d)}
            assert dep_steps <= seen | {step.id}, (step.id, dep)
        seen.add(step.id)
        count += 1
    assert count == len(tutorial) == len(seen)
    assert all(tutorial[i].op == "input" for i in seen if i.startswith("x["))


def test_step_count_of_the_tutorial(tutorial: tracer.Trace) -> None:
    t, d = 6, 3
    pairs, rows = t * t, t
    counts = {node.name: node.nsteps for node in tutorial.nodes}
    assert counts["x"] == t * d
    assert counts["omega.p"] == counts["omega.s"] == counts["z.t"] == counts["z.s"] == pairs * d
    assert counts["omega"] == counts["alpha"] == counts["naive.exp"] == counts["torch.alpha"] == pairs
    assert counts["stable.max"] == counts["div.sum"] == counts["alpha_sum"] == rows
    assert counts["z"] == t * d
    tensor_steps = [n for n in tutorial.nodes if n.granularity == "tensor"]
    assert {n.name for n in tensor_steps} == {
        "mat.omega",
        "mat.alpha",
        "mat.z",
        "check.naive",
        "check.torch",
        "check.omega",
        "check.alpha",
        "check.z",
    }
    assert counts["scaled.c"] == 1 and counts["scaled.x"] == t * d and counts["scaled.omega.p"] == pairs * d
    assert counts["scaled.naive.exp"] == counts["scaled.alpha"] == pairs
    assert all(counts[n.name] == 1 for n in tensor_steps)
    assert len(tutorial) == sum(counts.values()) == sum(1 for _ in tutorial)
    assert len(tutorial.nodes) == 37 + 19  # the lesson's own, and the overflow stage's


def test_lazy_iteration_and_filters(tutorial: tracer.Trace) -> None:
    first = list(itertools.islice(tutorial, 3))
    assert [s.id for s in first] == ["x[1,1]", "x[1,2]", "x[1,3]"]
    scores = [s.id for s in tutorial.steps(stage="scores", pattern="omega[2,*]")]
    assert scores == [f"omega[2,{j}]" for j in range(1, 7)]
    products = [s.id for s in tutorial.steps(pattern="omega[2,1].p[?]")]
    assert len(list(tutorial.steps(pattern="omega[2,*].p[*]"))) == 18
    assert len(list(tutorial.steps(pattern="omega**"))) == 36 + 2 * 108
    assert products == ["omega[2,1].p[1]", "omega[2,1].p[2]", "omega[2,1].p[3]"]
    assert [s.id for s in tutorial.steps(pattern="check.*")] == [
        "check.naive",
        "check.torch",
        "check.omega",
        "check.alpha",
        "check.z",
    ]


def test_slices(tutorial: tracer.Trace) -> None:
    row = tutorial["alpha[2]"]
    assert row.latex.startswith(r"\alpha_{2j}")
    np.testing.assert_array_equal(row.value, tutorial.tensor("alpha")[1])
    assert [s.id for s in tutorial.expand(tutorial["omega[2].p"])][:2] == ["omega[2,1].p[1]", "omega[2,1].p[2]"]
    assert tutorial["omega[2,1].p"].value.shape == (3,)
    assert tutorial["omega.p"].value.shape == (6, 6, 3)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("omega[7,1]", r"index i=7 is out of range 1..6"),
        ("omega[0,1]", r"out of range"),
        ("omegaa[1,1]", r"did you mean omega\[i,j\]"),
        ("omega[1,1,1]", r"does not fit omega\[i,j\]"),
        ("omega[1].p[1]", r"does not fit omega\[i,j\].p\[k\]"),
        ("omega[a]", r"malformed"),
        ("", r"empty"),
        ("omega[2,1]x", r"malformed"),
    ],
)
def test_bad_ids(tutorial: tracer.Trace, bad: str, message: str) -> None:
    with pytest.raises(StepNotFound, match=message):
        tutorial[bad]
    assert bad not in tutorial


def test_multi_digit_indices_use_commas() -> None:
    assert ids.fill(r"\omega_{<i,j>}", {"i": 2, "j": 1}, {"i": 6, "j": 6}) == r"\omega_{21}"
    assert ids.fill(r"\omega_{<i,j>}", {"i": 2, "j": 1}, {"i": 12, "j": 12}) == r"\omega_{2,1}"
    assert ids.fill(r"s_{<k-1>}", {"k": 3}, {"k": 5}) == "s_{2}"
    trace = tracer.trace_self_attention(np.ones((12, 2)), query=1)
    assert trace["omega[12,3]"].latex.startswith(r"\omega_{12,3}")


def test_render_parse_roundtrip() -> None:
    for node, split, index in [("omega.p", (2, 1), (2, 1, 3)), ("div.sum.s", (0, 1, 1), (2, 4)), ("x", (2,), (1,))]:
        text = ids.render(node, split, index)
        name, _, back = ids.parse(text)
        assert (name, back) == (node, index)


@pytest.mark.parametrize(
    "pattern",
    [
        "omega[2,*]",
        "omega[*,1].p[?]",
        "z[2].t[*,3]",
        "x[*]",
        "x[1?,*]",
        "*[2,2]",
        "div.*[1]",
        "check.*",
        "*.s[*,2]",
        "omega**",
    ],
)
def test_glob_listing_equals_scanning_every_id(pattern: str) -> None:
    """The index walk for id-shaped globs selects exactly what matching every id would."""
    from tracer.core.ids import glob_matcher

    t = tracer.trace_self_attention(np.ones((12, 2)), query=1)
    match = glob_matcher(pattern)
    assert [s.id for s in t.steps(pattern=pattern)] == [s.id for s in t if match(s.id)]


def test_repr_shows_the_value_as_the_book_prints_it(tutorial: tracer.Trace) -> None:
    assert repr(tutorial["omega[2,1]"]) == "Step(omega[2,1] = 0.9544, op='sum', stage='scores')"
    assert repr(tutorial["alpha[2]"]) == "Step(alpha[2] = <float32 [6]>, op='div', stage='normalize')"
    assert repr(tutorial).startswith("Trace(lesson='simple', tokens=['Your', 'journey',")
    assert repr(tutorial).endswith("query=2, dtype='float32', 56 nodes, 1689 steps)")


@pytest.mark.parametrize("which", ["step", "trace"])
def test_rich_display_gives_what_jupyter_asks_for(tutorial: tracer.Trace, which: str) -> None:
    """Jupyter's ``include``/``exclude`` choose the MIME types; the plain text is the repr."""
    obj = tutorial["omega[2,1]"] if which == "step" else tutorial
    full = obj._repr_mimebundle_()
    assert set(full) == {"text/plain", "text/html", "text/markdown"}
    assert full["text/plain"] == repr(obj)
    assert obj._repr_mimebundle_(include={"text/plain"}) == {"text/plain": repr(obj)}
    assert set(obj._repr_mimebundle_(exclude={"text/html"})) == {"text/plain", "text/markdown"}


def test_a_node_name_used_twice_is_refused(tutorial: tracer.Trace) -> None:
    x = tutorial.node("x")
    with pytest.raises(ValueError, match=r"^duplicate node x$"):
        tracer.Trace([x, tutorial.node("omega.p"), x], tutorial.meta)


# -- index expressions: where a layout op's entry came from ---------------------------
@pytest.mark.parametrize(
    ("expr", "bound", "want"),
    [
        ("i", {"i": 3}, 3),
        ("k-1", {"k": 3}, 2),
        ("k-1", {"i": 3}, None),  # the axis is not bound (a slice step)
        ("2*h+c-2", {"h": 2, "c": 1}, 3),  # a head split: head 2, component 1 of 2 per head
        ("(o-1)//2+1", {"o": 3}, 2),  # heads joined back: which head output column 3 came from
        ("(o-1)%2+1", {"o": 4}, 2),  # ... and which component
        ("i*j", {"i": 3, "j": 4}, 12),
        ("i+j-1", {"i": 3, "j": 4}, 6),
        ("j-i", {"i": 3, "j": 4}, 1),
        ("-i+5", {"i": 2}, 3),
        ("1", {}, 1),  # a broadcast axis of size one
        ("0*i+1", {"i": 7}, 1),
        ("i//(j-1)", {"i": 3, "j": 1}, 0),  # dividing by zero reads nothing (0 is outside every axis), never raises
        ("i%(j-1)", {"i": 3, "j": 1}, 0),
        ("2*h+c-2", {"h": 2}, None),  # c unbound
    ],
)
def test_index_expressions(expr: str, bound: dict[str, int], want: int | None) -> None:
    assert ids.index_expr(expr)(bound) == want


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("i**2", "only whole numbers, axis names and"),
        ("__import__('os')", "only whole numbers, axis names and"),
        ("i.real", "only whole numbers, axis names and"),
        ("1.5", "only whole numbers, axis names and"),
        ("True", "only whole numbers, axis names and"),
        ("I+1", "only whole numbers, axis names and"),
        ("i/2", "only whole numbers, axis names and"),
        ("i and j", "only whole numbers, axis names and"),
        ("-(i)", None),  # allowed: a minus sign of an expression
        ("i+", "bad index expression 'i\\+'"),
        ("i+" + "1+" * 100 + "1", "index expression too long \\(203 characters\\)"),
    ],
)
def test_index_expressions_allow_only_index_arithmetic(expr: str, message: str | None) -> None:
    """Trace files are untrusted: an index expression is integer arithmetic over axis names, nothing else."""
    if message is None:
        assert ids.index_expr(expr)({"i": 2}) == -2
        return
    with pytest.raises(ValueError, match=message):
        ids.index_expr(expr)


def test_index_axes() -> None:
    assert ids.index_axes("(h-1)*2+d") == {"h", "d"}
    assert ids.index_axes("k-1") == {"k"}
    assert ids.index_axes("1") == set()
    with pytest.raises(ValueError):
        ids.index_axes("i**2")


def test_fill_evaluates_index_arithmetic() -> None:
    """A layout op's formula names the entry it copied: a number once the axes are bound, ``·`` while one varies."""
    template = r"v_{<h,c>} = x_{<2*h+c-2>}"
    assert ids.fill(template, {"h": 2, "c": 1}, {"h": 2, "c": 2}) == "v_{21} = x_{3}"
    assert ids.fill(template, {"h": 2}, {"h": 2, "c": 2}) == "v_{2c} = x_{·}"
    assert ids.fill("x_{<(i>}", {"i": 1}, {"i": 2}) == "x_{<(i>}"  # not an expression: left as written


def test_parse_refuses_with_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=r"^empty step id$"):
        ids.parse("  ")
    with pytest.raises(ValueError, match=r"^malformed step id 'omega\[1,\]': indices must be whole numbers$"):
        ids.parse("omega[1,]")


def test_render_and_pattern_of_three_segments() -> None:
    assert ids.render("a.b.c", (1, 1, 1), [1, 2, 3]) == "a[1].b[2].c[3]"
    assert ids.render("a.b.c", (1, 1, 1), [1, 2]) == "a[1].b[2].c"
    assert ids.pattern("a.b.c", (2, 0, 1), ("i", "j", "k")) == "a[i,j].b.c[k]"


@pytest.mark.parametrize(
    ("values", "sizes", "want"),
    [
        ({"i": 1, "j": 2}, {"i": 9, "j": 9}, "x_{12}"),  # up to 9 entries an index is one digit: run together
        ({"i": 1, "j": 2}, {"i": 10, "j": 2}, "x_{1,2}"),  # from 10 entries on: commas
        ({"i": 1, "j": 2}, {}, "x_{12}"),  # sizes unknown: small
        ({"j": 2}, {"i": 3, "j": 3}, "x_{i2}"),  # an unbound axis stays a letter, the others are still filled
    ],
)
def test_fill_writes_multi_indices_unambiguously(values: dict[str, int], sizes: dict[str, int], want: str) -> None:
    assert ids.fill("x_{<i,j>}", values, sizes) == want


def test_rename_to_a_dot() -> None:
    assert ids.rename(r"x_{<i,j>} + y_{<k-1>}", {"j": "*", "k": "m"}) == r"x_{\cdot} + y_{<m-1>}"


def test_rename_keeps_offsets_and_the_other_axes() -> None:
    assert ids.rename(r"\omega_{<i,j>}", {"j": "m"}) == r"\omega_{<i,m>}"
    assert ids.rename(r"s_{<k-1>} + e_{<k>}", {"k": "j"}) == r"s_{<j-1>} + e_{<j>}"
    assert ids.rename(r"e^{\omega_{<i,j'>}}", {"j": "m"}) == r"e^{\omega_{<i,j'>}}"  # j' is its own (summation) axis


def test_index_expressions_with_axes_on_the_right() -> None:
    assert ids.index_expr("i//j")({"i": 7, "j": 2}) == 3
    assert ids.index_expr("i%j")({"i": 7, "j": 2}) == 1
    for expr in ("-(i**2)", "(i**2)+1", "1+(i**2)"):
        with pytest.raises(ValueError, match=r"^bad index expression '" + re.escape(expr) + "'"):
            ids.index_expr(expr)


def test_id_shape_reads_globs_written_like_ids() -> None:
    assert ids.id_shape("omega[2,*].p[*]") == [("omega", ["2", "*"]), ("p", ["*"])]
    assert ids.id_shape("x") == [("x", None)]
    assert ids.id_shape("omega**") is None
    assert ids.id_shape("omega[1*") is None


def test_may_match_never_rejects_a_node_it_could_match() -> None:
    assert ids.may_match("omega", "omeg?")
    assert ids.may_match("a.b.c", "a")
    assert ids.may_match("Wq", "Wq[1]")
    assert not ids.may_match("alpha", "omega*")
