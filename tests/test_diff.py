"""tracer.diff: values, tolerances, structure, metadata and root causes."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tracer
from tracer.compare import differ
from tracer.compare.diffmask import carry, compare, first, scan, self_step, shift
from tracer.core.trace import Node, Ref


def edit(trace: tracer.Trace, name: str, index: tuple[int, ...], value: float) -> tracer.Trace:
    """A copy of ``trace`` with one stored value replaced (as if a kernel had computed it differently)."""
    nodes = []
    for n in trace.nodes:
        if n.name == name:
            v = n.value.copy()
            v[index] = value
            n = dataclasses.replace(n, value=v)
        nodes.append(n)
    return tracer.Trace(nodes, trace.meta)


def test_facade_diff_is_the_function() -> None:
    assert tracer.diff is differ.diff


def test_equal_traces(tutorial: tracer.Trace) -> None:
    d = tracer.diff(tutorial, tutorial)
    assert d.equal
    assert d.totals.compared == len(tutorial)
    assert not d.roots and not d.steps and not d.meta and not d.nodes


def test_changed_input_has_one_root_cause(tutorial: tracer.Trace, nudged: tracer.Trace) -> None:
    d = tracer.diff(tutorial, nudged)
    assert not d.equal
    assert [r.id for r in d.roots] == ["x[1,1]"]
    assert d.totals.roots == 1
    assert d.totals.differing > 500  # the change flows into every weight and context vector
    root = d.roots[0]
    assert (root.a, root.b) == (pytest.approx(0.43), pytest.approx(0.53))
    assert root.abs_diff == pytest.approx(0.1, rel=1e-5)
    assert root.tol == pytest.approx(differ.DEFAULT_ATOL + differ.DEFAULT_RTOL * 0.53)
    assert root.formula == "x^{(1)}_{1}"
    assert d.steps[0] == root and all(not s.root for s in d.steps[1:])
    inputs = {c.subject: c for c in d.meta}["inputs.x"]
    assert inputs.note == "1 of 18 values differ beyond tolerance"
    text = d.text()
    assert "1 root cause" in text and "x[1,1]" in text


def test_a_changed_partial_sum_is_its_own_root(tutorial: tracer.Trace) -> None:
    changed = edit(tutorial, "omega.s", (1, 0, 1), 0.5)  # omega[2,1].s[2]
    d = tracer.diff(tutorial, changed)
    assert [r.id for r in d.roots] == ["omega[2,1].s[2]"]
    assert d.totals.differing == 1  # an edited value: nothing was recomputed from it


def test_several_independent_changes_are_several_roots(tutorial: tracer.Trace) -> None:
    changed = edit(edit(tutorial, "x", (0, 0), 0.1), "x", (5, 2), 0.9)
    d = tracer.diff(tutorial, changed, limit=5)
    assert [r.id for r in d.roots] == ["x[1,1]", "x[6,3]"]
    assert d.totals.differing == 2  # edited values: nothing was recomputed from them


def test_tensor_level_step(tutorial: tracer.Trace) -> None:
    changed = edit(tutorial, "mat.alpha", (1, 2), 0.25)
    d = tracer.diff(tutorial, changed)
    root = d.roots[0]
    assert (root.id, root.where, root.b) == ("mat.alpha", (2, 3), 0.25)
    assert [s.id for s in d.steps] == ["mat.alpha"]
    assert d.totals.roots == 1


def test_metadata_changes(tutorial: tracer.Trace) -> None:
    other = tracer.trace_self_attention(query=3, dtype="float64", tokens=["a", "b", "c", "d", "e", "f"])
    d = tracer.diff(tutorial, other)
    changes = {c.subject: (c.a, c.b) for c in d.meta}
    assert changes["query"] == (2, 3)
    assert changes["dtype"] == ("float32", "float64")
    assert changes["tokens"][1] == ["a", "b", "c", "d", "e", "f"]
    # float64 values agree with float32 ones within the float32 tolerance; the overflow demonstration
    # scales by 100 instead of 10 (float64 overflows later), so that stage differs by design
    assert {s.stage: s.differing for s in d.stages if s.stage != "overflow"} == dict.fromkeys(
        tutorial.meta["stages"][:-1], 0
    )
    assert changes["overflow"] == ({"factor": 10, "max_power": 12}, {"factor": 100, "max_power": 12})
    assert not d.equal


def test_steps_only_in_a_or_b(tutorial: tracer.Trace) -> None:
    from tracer.record.inputs import tutorial as tutorial_inputs

    values, tokens = tutorial_inputs()
    five = tracer.trace_self_attention(values[:5], tokens=tokens[:5])
    d = tracer.diff(tutorial, five, limit=1000)
    t = d.totals
    assert t.only_a > 0 and t.only_b == 0
    kinds = {s.id: s.kind for s in d.steps}
    assert kinds["x[6,1]"] == "only_a"
    assert "x[1,1]" not in kinds  # the shared rows still match
    assert {c.subject for c in d.meta} >= {"n_tokens", "tokens", "inputs.x"}
    assert ("x", "shape", [6, 3], [5, 3]) in [(c.subject, c.field, c.a, c.b) for c in d.nodes]
    back = tracer.diff(five, tutorial)
    assert back.totals.only_b == t.only_a and back.totals.only_a == 0


def test_node_changes(tutorial: tracer.Trace) -> None:
    nodes = [dataclasses.replace(n, latex="changed") if n.name == "omega" else n for n in tutorial.nodes]
    d = tracer.diff(tutorial, tracer.Trace([n for n in nodes if n.name != "check.z"], tutorial.meta))
    fields = {(c.subject, c.field) for c in d.nodes}
    assert ("omega", "latex") in fields and ("check.z", "exists") in fields
    assert d.totals.only_a == 1  # check.z is one tensor-level step


@pytest.mark.parametrize(
    ("factor", "close"),
    [(0.0, True), (0.9, True), (1.1, False), (-0.9, True), (-1.1, False)],
)
def test_tolerance_boundary(factor: float, close: bool) -> None:
    rtol, atol = 1e-3, 1e-4
    b = np.array([2.0, -3.0, 0.0])
    a = b + factor * (atol + rtol * np.abs(b))
    bad = compare(a, b, rtol, atol).bad
    assert (bad is None) == close


def test_wide_tolerances(tutorial: tracer.Trace, nudged: tracer.Trace) -> None:
    d = tracer.diff(tutorial, nudged, rtol=0, atol=100)
    # only the overflow demonstration's exps (around 1e38) move by more than 100
    assert {s.stage for s in d.stages if s.differing} == {"overflow"}
    assert {r.node for r in d.roots} <= {"scaled.naive.exp", "scaled.naive.sum", "scaled.naive.alpha"}
    assert tracer.diff(tutorial, edit(tutorial, "x", (0, 0), 0.53), rtol=0, atol=0.11).equal


def test_bad_tolerances(tutorial: tracer.Trace) -> None:
    with pytest.raises(ValueError, match="rtol"):
        tracer.diff(tutorial, tutorial, rtol=-1)
    with pytest.raises(ValueError, match="atol"):
        tracer.diff(tutorial, tutorial, atol=math.nan)


@pytest.mark.parametrize(
    ("a", "b", "close"),
    [
        (math.nan, math.nan, True),
        (math.nan, 1.0, False),
        (1.0, math.nan, False),
        (math.inf, math.inf, True),
        (-math.inf, -math.inf, True),
        (math.inf, -math.inf, False),
        (1e30, math.inf, False),
        (math.inf, 1e30, False),
        (math.nan, math.inf, False),
    ],
)
def test_nonfinite(a: float, b: float, close: bool) -> None:
    for dtype in (np.float32, np.float64):
        got = compare(np.array([1.0, a], dtype), np.array([1.0, b], dtype), 1e-5, 1e-6)
        assert (got.bad is None) == close


def test_largest_difference_counts_finite_differences_only() -> None:
    """The stage table's "max |A-B|": a NaN difference is not a size, so none at all reads 0."""
    assert compare(np.array([np.nan]), np.array([1.0]), 1e-5, 1e-6).big == 0.0
    assert compare(np.array([np.nan, 1.0]), np.array([1.0, 1.5]), 1e-5, 1e-6).big == 0.5
    assert compare(np.array([np.inf, 1.0]), np.array([np.inf, 1.25]), 1e-5, 1e-6).big == 0.25


def test_compare_tells_beyond_tolerance_from_not_equal() -> None:
    got = compare(np.array([1.0, 2.0, 3.0]), np.array([1.0 + 1e-9, 3.0, 3.0]), 1e-5, 1e-6)
    assert got.bad is not None and got.ne is not None
    assert (got.bad.tolist(), got.ne.tolist(), got.big) == ([False, True, False], [True, True, False], 1.0)
    same = compare(np.array([1.0, np.nan]), np.array([1.0, np.nan]), 1e-5, 1e-6)
    assert (same.bad, same.ne, same.big) == (None, None, 0.0)
    nan = compare(np.array([np.nan, 1.0]), np.array([np.nan, 2.0]), 1e-5, 1e-6)
    assert nan.ne is not None and nan.ne.tolist() == [False, True]  # NaN equals NaN beside another change


def test_a_nan_in_both_traces_does_not_carry_a_change() -> None:
    """y[1] reads the changed x[1] but is NaN in both traces, so it came out the same (y[2] only drifted
    by an ulp) and the edited z is a root."""
    a = _xyz([1, 2], [math.nan, 2], 10)
    b = _xyz([5, 2], [math.nan, float(np.nextafter(2.0, 3.0))], 99)
    assert [r.id for r in tracer.diff(a, b).roots] == ["x[1]", "z[1]"]


def test_compare_of_a_float32_and_a_float64_array_works_in_float64() -> None:
    """A float32 trace against a float64 one: 1 - 1.1 is 0.10000000000000009 exactly, not its float32 rounding."""
    got = compare(np.array([1.0], np.float32), np.array([1.1]), 1e-5, 1e-6)
    assert got.bad is not None and got.big == 0.10000000000000009


def test_compare_of_infinities_warns_nothing() -> None:
    """inf - inf and inf * 0 are NaN inside the comparison; numpy must not print a RuntimeWarning for them."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = compare(np.array([np.inf, 1.0]), np.array([np.inf, 2.0]), 0.0, 0.0)
    assert got.bad is not None and got.bad.tolist() == [False, True] and got.big == 1.0


def test_compare_reads_arrays_longer_than_one_block() -> None:
    from tracer.compare.diffmask import CHUNK

    a = np.zeros(CHUNK + 3, dtype=np.float32)
    b = a.copy()
    b[-1] = 1.0
    got = compare(a, b, 1e-5, 1e-6)
    assert got.bad is not None and np.flatnonzero(got.bad).tolist() == [CHUNK + 2] and got.big == 1.0


def test_compare_reads_each_entry_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocks tile the array: 10 entries in blocks of 4 are compared as 4, 4 and 2 (a pass, not a square)."""
    from tracer.compare import diffmask

    sizes: list[int] = []
    block = diffmask._block

    def spy(a: np.ndarray, b: np.ndarray, *rest: Any) -> float:
        sizes.append(a.size)
        return block(a, b, *rest)

    monkeypatch.setattr(diffmask, "CHUNK", 4)
    monkeypatch.setattr(diffmask, "_block", spy)
    a = np.zeros(10)
    b = a.copy()
    b[9] = 1.0
    got = compare(a, b, 1e-5, 1e-6)
    assert sizes == [4, 4, 2]
    assert got.bad is not None and np.flatnonzero(got.bad).tolist() == [9] and got.big == 1.0


def test_nonfinite_in_a_trace(tutorial: tracer.Trace) -> None:
    nan_a = edit(tutorial, "naive.exp", (0, 0), math.inf)
    assert tracer.diff(nan_a, nan_a).equal
    d = tracer.diff(tutorial, nan_a)
    assert d.roots[0].id == "naive.exp[1,1]" and d.roots[0].b == math.inf
    assert d.to_json()["roots"][0]["b"] == "Infinity"


def test_paths_and_format_version(trace_files: dict[str, str]) -> None:
    d = tracer.diff(trace_files["a"], trace_files["b"])
    assert d.a_name == trace_files["a"] and [r.id for r in d.roots] == ["x[1,1]"]
    assert tracer.diff(trace_files["a"], trace_files["same"]).equal


def test_loaded_trace_equals_recorded(tutorial: tracer.Trace, trace_files: dict[str, str]) -> None:
    assert tracer.diff(tutorial, trace_files["a"]).equal  # different memory layouts, same values


# -- the mask algebra ----------------------------------------------------------
def test_carry_follows_index_expressions() -> None:
    status = np.zeros((3, 4), dtype=bool)
    status[1, 2] = True
    axes, shape = ("i", "j", "k"), (3, 3, 4)
    same = np.broadcast_to(carry(status, Ref("x", ("i", "k")), axes, shape), shape)
    assert same[1, :, 2].all() and same.sum() == 3
    star = np.broadcast_to(carry(status, Ref("x", ("i", "*")), axes, shape), shape)
    assert star[1].all() and star.sum() == 12
    back = np.broadcast_to(carry(status, Ref("x", ("j", "k-1")), axes, shape), shape)
    assert back[:, 1, 3].all() and back.sum() == 3
    assert carry(status, Ref("x"), axes, shape) is True
    # a transposed read: entry [i,j] of the reader reads operand entry [j,i]
    square = np.zeros((3, 3), dtype=bool)
    square[0, 2] = True
    swapped = np.broadcast_to(carry(square, Ref("x", ("j", "i")), ("i", "j"), (3, 3)), (3, 3))
    assert swapped.tolist() == square.T.tolist()
    # an index this cannot follow (an axis the reader lacks, a repeated axis) falls back to "any entry"
    assert carry(status, Ref("x", ("q", "k")), axes, shape) is True
    assert carry(status, Ref("x", ("i", "i")), axes, shape) is True
    quiet = np.zeros((3, 4), dtype=bool)
    assert carry(quiet, Ref("x", ("q", "k")), axes, shape) is False
    assert carry(quiet, Ref("x", ("i", "i")), axes, shape) is False


def test_shift_and_scan() -> None:
    m = np.array([True, False, False, True])
    assert shift(m, 0, -1, 4).tolist() == [False, True, False, False]
    assert shift(m, 0, 1, 3).tolist() == [False, False, True]
    assert shift(np.array([False, True, False, True]), 0, 1, 4).tolist() == [True, False, True, False]
    rows = np.array([[True, False], [False, True], [False, False]])
    assert shift(rows, 0, 1, 4).tolist() == [[False, True], [False, False], [False, False], [False, False]]
    assert shift(rows, 1, -1, 2).tolist() == [[False, True], [False, False], [False, False]]
    ne = np.array([True, True, False, True])
    base = np.array([True, False, False, False])
    assert scan(ne, base, 0, 1).tolist() == [True, True, False, False]
    # a change starts wherever base has one, and never wraps around from the end
    assert scan(ne, np.array([False, False, False, True]), 0, 1).tolist() == [False, False, False, True]
    assert scan(np.ones(4, dtype=bool), np.array([False, False, True, False]), 0, 1).tolist() == [
        False,
        False,
        True,
        True,
    ]
    assert scan(np.ones(5, dtype=bool), np.array([True, False, False, False, False]), 0, 2).tolist() == [
        True,
        False,
        True,
        False,
        True,
    ]


@pytest.mark.parametrize(
    ("index", "want"),
    [
        (("i", "j", "k-1"), (2, 1)),  # a running sum reads its previous entry along k
        (("i", "j-2", "k"), (1, 2)),
        (("i", "j", "k"), None),  # no shift: not a running sum
        (("i", "k", "j-1"), None),  # axes out of order
        (("i-1", "j", "k-1"), None),  # two shifts
        (("i", "j", "k+1"), None),  # reads ahead
        (("i", "j+1", "k-1"), None),  # reads ahead on one axis, back on another
        (("*", "j", "k-1"), None),
        (("i", "k-1"), None),  # too few
        (None, None),
    ],
)
def test_self_step(index: tuple[str, ...] | None, want: tuple[int, int] | None) -> None:
    assert self_step(Ref("s", index), ("i", "j", "k")) == want


def test_drift_within_tolerance_does_not_carry_a_change(tutorial: tracer.Trace) -> None:
    """Products that drifted by a rounding (another kernel) do not hide the score that was really changed."""
    nodes = []
    for n in tutorial.nodes:
        if n.name == "omega.p":
            n = dataclasses.replace(n, value=np.nextafter(n.value, np.float32(np.inf)))  # one ulp up, everywhere
        nodes.append(n)
    drifted = tracer.Trace(nodes, tutorial.meta)
    assert tracer.diff(tutorial, drifted).equal  # within tolerance on its own
    changed = edit(drifted, "omega", (1, 0), 0.5)  # omega[2,1]
    d = tracer.diff(tutorial, changed)
    assert [r.id for r in d.roots] == ["omega[2,1]"]
    assert d.totals.differing == 1


def test_rows_carry_both_values(tutorial: tracer.Trace) -> None:
    """A tensor-level root names its first differing entry with both values; only-in rows carry their one value."""
    changed = edit(tutorial, "mat.alpha", (1, 2), 0.25)
    root = tracer.diff(tutorial, changed).roots[0]
    assert (root.kind, root.a) == ("value", pytest.approx(float(tutorial.tensor("mat.alpha")[1, 2])))
    assert root.formula == tutorial["mat.alpha"].latex and root.stage == "matrix"
    assert root.abs_diff == pytest.approx(abs(root.a - 0.25))
    fewer = tracer.Trace([n for n in tutorial.nodes if n.name != "check.z"], tutorial.meta)
    gone = [s for s in tracer.diff(tutorial, fewer).steps if s.id == "check.z"]
    assert [(s.kind, s.a, s.b, s.root) for s in gone] == [("only_a", float(tutorial["check.z"].value), None, False)]
    back = [s for s in tracer.diff(fewer, tutorial).steps if s.id == "check.z"]
    assert [(s.kind, s.a, s.b) for s in back] == [("only_b", None, float(tutorial["check.z"].value))]


def test_only_in_rows_of_elements(tutorial: tracer.Trace) -> None:
    from tracer.record.inputs import tutorial as tutorial_inputs

    values, tokens = tutorial_inputs()
    five = tracer.trace_self_attention(values[:5], tokens=tokens[:5])
    row = next(s for s in tracer.diff(tutorial, five, limit=1000).steps if s.id == "x[6,1]")
    assert (row.a, row.b, row.abs_diff, row.root) == (pytest.approx(0.05), None, None, False)
    row = next(s for s in tracer.diff(five, tutorial, limit=1000).steps if s.id == "x[6,1]")
    assert (row.a, row.b) == (None, pytest.approx(0.05))


def test_first_lists_the_first_true_entries_in_id_order() -> None:
    assert first(np.array(True), 1) == [()]
    assert first(np.array(True), 0) == []
    assert first(np.array(False), 3) == []
    assert first(np.array([False, True, True, True]), 2) == [(1,), (2,)]
    m = np.zeros((3, 2, 2), dtype=bool)
    m[0, 1, 1] = m[2, 0, 0] = m[2, 1, 0] = True
    assert first(m, 10) == [(0, 1, 1), (2, 0, 0), (2, 1, 0)]
    assert first(m, 2) == [(0, 1, 1), (2, 0, 0)]
    assert first(m, 0) == []


# -- root causes in small hand-built traces ----------------------------------------
def _node(name: str, values: list[float] | list[list[float]], *reads: tuple[str, tuple[str, ...]]) -> Node:
    """A node whose entries read the given operands (by index expression); one axis unless the values are a table."""
    value = np.array(values, dtype=np.float64)
    axes = ("i", "j")[: value.ndim]
    args = tuple(Ref(node, index) for node, index in reads)
    return Node(name, "input" if not reads else "mul", "s", axes, (value.ndim,), value, args)


def _trace(*nodes: Node) -> tracer.Trace:
    return tracer.Trace(list(nodes), {"dtype": "float64"})


def _xyz(x: list[float], y: list[float], z: float) -> tracer.Trace:
    """x; y[i] reads x[i]; z reads every entry of y."""
    return _trace(_node("x", x), _node("y", y, ("x", ("i",))), _node("z", [z], ("y", ("*",))))


def test_an_independent_edit_downstream_of_a_changed_input_is_its_own_root(
    tutorial: tracer.Trace, nudged: tracer.Trace
) -> None:
    """omega[2,3] reads neither x[1,*] nor anything computed from it, so editing it is a second cause."""
    d = tracer.diff(tutorial, edit(nudged, "omega", (1, 2), 0.5))
    assert [r.id for r in d.roots] == ["x[1,1]", "omega[2,3]"]


def test_removing_a_token_changes_the_inputs_and_nothing_else_is_a_cause(tutorial: tracer.Trace) -> None:
    """Six tokens against five: every changed weight follows from the missing row, so no step is a root cause."""
    from tracer.record.inputs import tutorial as tutorial_inputs

    values, tokens = tutorial_inputs()
    five = tracer.trace_self_attention(values[:5], tokens=tokens[:5])
    for a, b in ((tutorial, five), (five, tutorial)):
        d = tracer.diff(a, b, limit=1000)
        assert d.totals.differing > 300 and d.roots == ()
        assert not any(s.root for s in d.steps)


def test_an_unchanged_entry_stops_a_change() -> None:
    """y[1] reads the changed x[1] but came out the same, and y[3] drifted by an ulp on its own:
    neither carries a change, so the edited z, which reads all of y, is a root cause of its own.
    A NaN present in both traces at the same place is equal."""
    up = float(np.nextafter(3.0, 4.0))
    a = _xyz([1, 2, 3, math.nan], [0, 0, 3, math.nan], 10)
    b = _xyz([5, 2, 3, math.nan], [0, 0, up, math.nan], 99)
    assert [r.id for r in tracer.diff(a, b).roots] == ["x[1]", "z[1]"]


def test_a_change_carries_past_a_nan() -> None:
    """y copies x, NaN included; the changed x[1] explains y[1] and the z that reads y."""
    a = _xyz([1, 2, math.nan], [1, 2, math.nan], 3)
    b = _xyz([1.5, 2, math.nan], [1.5, 2, math.nan], 3.5)
    d = tracer.diff(a, b)
    assert [r.id for r in d.roots] == ["x[1]"]
    assert [s.id for s in d.steps] == ["x[1]", "y[1]", "z[1]"]


def test_a_node_that_cannot_be_matched_counts_as_changed_for_its_readers() -> None:
    """x is a list in A and a table in B, so its entries cannot be paired: y's change is blamed on x, not on y."""
    a = _trace(_node("x", [1, 2]), _node("y", [1, 2], ("x", ("i",))))
    b = _trace(_node("x", [[1, 2]]), _node("y", [1, 3], ("x", ("i",))))
    d = tracer.diff(a, b)
    assert d.roots == () and [(s.id, s.root) for s in d.steps if s.node == "y"] == [("y[2]", False)]
    assert ("x", "shape", [2], [1, 2]) in [(c.subject, c.field, c.a, c.b) for c in d.nodes]


def test_a_step_that_reads_a_node_only_one_trace_has_is_not_a_root() -> None:
    a = _trace(_node("x", [1, 2]), _node("y", [1, 2], ("x", ("i",))))
    b = _trace(_node("w", [7, 7]), _node("x", [1, 2]), _node("y", [1, 9], ("x", ("i",)), ("w", ("i",))))
    d = tracer.diff(a, b)
    assert d.roots == () and [s.id for s in d.steps] == ["y[2]", "w[1]", "w[2]"]
    assert [s.kind for s in d.steps] == ["value", "only_b", "only_b"]


def test_rows_say_what_they_are(tutorial: tracer.Trace, nudged: tracer.Trace) -> None:
    """Each row is a "value" row, marked as a root cause or not; ``limit`` caps the rows listed."""
    d = tracer.diff(tutorial, nudged, limit=3)
    assert [(r.id, r.kind, r.root) for r in d.roots] == [("x[1,1]", "value", True)]
    assert [s.kind for s in d.steps] == ["value"] * 3
    assert [s.root for s in d.steps] == [True, False, False]
    one = tracer.diff(tutorial, nudged, limit=1)
    assert [r.id for r in one.roots] == ["x[1,1]"] and [s.id for s in one.steps] == ["x[1,1]"]
    tensor = tracer.diff(tutorial, edit(tutorial, "mat.alpha", (1, 2), 0.25))
    assert [(s.id, s.kind, s.root) for s in tensor.steps] == [("mat.alpha", "value", True)]


def test_metadata_rows_say_which_side_lacks_a_key() -> None:
    """Known keys first (in the usual order), then the others sorted; a key only one side has says which."""
    x = _node("x", [1, 2])
    a = tracer.Trace([x], {"dtype": "float64", "lesson": "simple", "n_tokens": 1, "extra": 1})
    b = tracer.Trace([x], {"dtype": "float64", "query": 2, "n_tokens": 2, "zz": 3})
    assert tracer.diff(a, b).meta == (
        differ.Change("lesson", "value", "simple", None, "missing in B"),
        differ.Change("query", "value", None, 2, "missing in A"),
        differ.Change("n_tokens", "value", 1, 2, ""),
        differ.Change("extra", "value", 1, None, "missing in B"),
        differ.Change("zz", "value", None, 3, "missing in A"),
    )


def test_input_rows_count_values_beyond_tolerance() -> None:
    """Every input node that differs gets a row (shapes, and how many values moved); other nodes do not."""
    a = _trace(_node("x", [1, 2]), _node("y", [1, 2], ("x", ("i",))), _node("w", [1, 2, 3]))
    b = _trace(_node("x", [1, 2]), _node("y", [1, 5], ("x", ("i",))), _node("w", [1, 2, 9, 9]))
    assert tracer.diff(a, b).meta == (
        differ.Change("inputs.w", "value", [3], [4], "1 of 3 values differ beyond tolerance"),
    )


def test_a_removed_token_is_an_input_row_with_no_moved_value(tutorial: tracer.Trace) -> None:
    from tracer.record.inputs import tutorial as tutorial_inputs

    values, tokens = tutorial_inputs()
    five = tracer.trace_self_attention(values[:5], tokens=tokens[:5])
    rows = [c for c in tracer.diff(tutorial, five).meta if c.subject.startswith("inputs.")]
    assert rows == [differ.Change("inputs.x", "value", [6, 3], [5, 3], "0 of 18 values differ beyond tolerance")]


def test_a_file_of_another_format_version_is_named(tutorial: tracer.Trace, tmp_path: Path) -> None:
    from tracer.core import serialize

    doc = serialize.to_dict(tutorial)
    doc["version"] = 1
    doc["digest"] = serialize._digest(doc)
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(doc))
    d = tracer.diff(tutorial, path)
    assert differ.Change("format_version", "value", serialize.FORMAT_VERSION, 1) in d.meta
    first = f"the first Trace given (lesson 'simple', query 2, float32, {len(tutorial):,} steps)"
    assert (d.a_name, d.b_name) == (first, str(path))
    doc["version"] = 99
    doc["digest"] = serialize._digest({k: v for k, v in doc.items() if k != "digest"})
    path.write_text(json.dumps(doc))
    with pytest.raises(tracer.TraceFormatError, match=r"^'v1.json' has format version 99"):
        tracer.diff(path, tutorial)


def test_node_rows_name_the_field_and_both_sides(tutorial: tracer.Trace) -> None:
    a = _trace(_node("x", [1, 2]), _node("y", [1, 2], ("x", ("i",))), _node("z", [3], ("y", ("*",))))
    nodes = [_node("x", [1, 2]), dataclasses.replace(_node("z", [3], ("y", ("*",))), latex="z")]
    changes = tracer.diff(a, _trace(*nodes)).nodes
    assert differ.Change("y", "exists", True, False) in changes
    assert differ.Change("z", "latex", "", "z") in changes
    assert differ.Change("y", "exists", False, True) in tracer.diff(_trace(*nodes), a).nodes
    x32 = dataclasses.replace(_node("x", [1, 2]), value=np.array([1, 2], dtype=np.float32))
    assert tracer.diff(_trace(x32), _trace(_node("x", [1, 2]))).nodes == (
        differ.Change("x", "dtype", "float32", "float64"),
    )
    other = tracer.trace_self_attention(dtype="float64")
    assert not any(c.field == "dtype" for c in tracer.diff(tutorial, other).nodes)  # said once, in the metadata


def test_stage_counts_of_unmatched_and_tensor_steps() -> None:
    """A tensor-level step is one step whatever its shape; a node only in B counts its steps there."""
    t_a = dataclasses.replace(_node("t", [1, 2]), granularity="tensor")
    t_b = dataclasses.replace(_node("t", [[1, 2]]), granularity="tensor")
    d = tracer.diff(_trace(_node("x", [1, 2]), t_a), _trace(_node("x", [1, 2]), t_b, _node("u", [5, 6, 7])))
    assert d.stages == (differ.StageCount("s", 3, 1, 0, 3, 0, 0.0),)
    back = tracer.diff(_trace(_node("x", [1, 2]), t_b, _node("u", [5, 6, 7])), _trace(_node("x", [1, 2]), t_a))
    assert back.stages == (differ.StageCount("s", 3, 1, 3, 0, 0, 0.0),)
    only_b = [(f"u[{i}]", "only_b", False) for i in (1, 2, 3)]
    assert [(s.id, s.kind, s.root) for s in d.steps] == [("t", "value", False), *only_b]


def test_an_entry_only_one_trace_has_explains_its_readers_despite_drift() -> None:
    """B has a third x, and x[1] drifted within tolerance: z, the sum over all x, changed because of x[3]
    (not on its own), so nothing is a root cause; x[3] is listed as a step only B has."""
    x_a = [1.0, 2.0]
    x_b = [float(np.nextafter(1.0, 2.0)), 2.0, 5.0]
    d = tracer.diff(
        _trace(_node("x", x_a), _node("z", [3], ("x", ("*",)))), _trace(_node("x", x_b), _node("z", [8], ("x", ("*",))))
    )
    assert d.roots == ()
    assert [(s.id, s.kind, s.root) for s in d.steps] == [("x[3]", "only_b", False), ("z[1]", "value", False)]


def test_a_tensor_step_of_another_shape_with_equal_overlap() -> None:
    t_a = dataclasses.replace(_node("t", [1, 2]), granularity="tensor")
    t_b = dataclasses.replace(_node("t", [1, 2, 3]), granularity="tensor")
    d = tracer.diff(_trace(t_a), _trace(t_b))
    assert [(s.id, s.kind, s.a, s.b, s.root) for s in d.steps] == [("t", "value", None, None, False)]
    assert d.totals.differing == 1 and not d.equal


def test_a_node_that_became_tensor_level_is_one_row() -> None:
    t_b = dataclasses.replace(_node("t", [1, 3]), granularity="tensor")
    d = tracer.diff(_trace(_node("t", [1, 2])), _trace(t_b))
    assert (d.steps[0].id, d.steps[0].where, d.steps[0].a, d.steps[0].b) == ("t", (2,), 2.0, 3.0)


def test_a_trace_of_one_changed_node(tmp_path: Path) -> None:
    d = tracer.diff(_trace(_node("x", [1.0])), _trace(_node("x", [2.0])), limit=7)
    assert [(r.id, r.op, r.root) for r in d.roots] == [("x[1]", "input", True)]
    assert d.limit == 7
    assert d.a_name.startswith("the first Trace given (") and d.b_name.startswith("the second Trace given (")
    assert d.stages[0].max_abs_diff == 1.0
    assert tracer.diff(_trace(_node("x", [1.0])), _trace(_node("x", [1.0]))).stages[0].max_abs_diff == 0.0


def test_limit_caps_the_root_causes(tutorial: tracer.Trace) -> None:
    changed = edit(edit(tutorial, "x", (0, 0), 0.1), "x", (5, 2), 0.9)
    d = tracer.diff(tutorial, changed, limit=1)
    assert [r.id for r in d.roots] == ["x[1,1]"] and d.totals.roots == 2
    assert tracer.diff(tutorial, changed, limit=0).roots == ()
    # roots in two nodes: the cap counts the ones already listed
    three = edit(edit(edit(tutorial, "x", (0, 0), 0.1), "omega", (1, 2), 0.5), "omega", (2, 1), 0.5)
    assert [r.id for r in tracer.diff(tutorial, three, limit=2).roots] == ["x[1,1]", "omega[2,3]"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rtol": -1}, r"^rtol must be a finite number >= 0, not -1$"),
        ({"atol": math.inf}, r"^atol must be a finite number >= 0, not inf$"),
        ({"limit": -1}, r"^limit must be >= 0, not -1$"),
    ],
)
def test_bad_arguments_are_named(tutorial: tracer.Trace, kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tracer.diff(tutorial, tutorial, **kwargs)  # type: ignore[arg-type]


def test_a_file_whose_values_do_not_follow_gets_a_note(tutorial: tracer.Trace, tmp_path: Path) -> None:
    """A digest can be recomputed by whoever edits a file; the diff then says which values do not follow."""
    from tracer.core import serialize

    doc = serialize.to_dict(tutorial)
    spec = next(n for n in doc["nodes"] if n["name"] == "omega")
    spec["value"]["data"][7] += 0.5  # omega[2,2]
    doc["digest"] = serialize._digest(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    d = tracer.diff(tutorial, path)
    assert len(d.notes) == 1 and d.notes[0].startswith(f"{path}: ") and "omega[2,2]" in d.notes[0]
    assert tracer.diff(tutorial, tracer.load(path)).notes == ()  # a Trace object is the caller's own
