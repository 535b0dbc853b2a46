"""Looking steps up in a trace: the exact refusal for each kind of bad id, and slices that know their inputs.

A student types ids by hand, so each wrong id gets a line that says what is
wrong with it: an unknown name (with at most three near names, in the id
grammar), an id with too many or too few indices, an index out of range.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracer
from tracer.errors import StepNotFound


@pytest.fixture(scope="module")
def t() -> tracer.Trace:
    return tracer.trace_self_attention()


NEAR_OMEGA = "omega[i,j], omega[i,j].s[k], omega[i,j].p[k]?"  # three near names, no more


@pytest.mark.parametrize(
    ("step_id", "message"),
    [
        ("omegaa", "no step 'omegaa' in this trace; did you mean " + NEAR_OMEGA),
        ("omegaa[2,1]", "no step 'omegaa[2,1]' in this trace; did you mean " + NEAR_OMEGA),
        ("zzzz", "no step 'zzzz' in this trace"),  # nothing near: no hint
        ("omega[2].p[3]", "'omega[2].p[3]' does not fit omega[i,j].p[k]"),  # a short segment before another
        ("omega[2,1,1]", "'omega[2,1,1]' does not fit omega[i,j]"),
        ("omega[7,1]", "'omega[7,1]': index i=7 is out of range 1..6"),
        ("omega[0,1]", "'omega[0,1]': index i=0 is out of range 1..6"),
        ("omega[2,1].p[4]", "'omega[2,1].p[4]': index k=4 is out of range 1..3"),
    ],
)  # fmt: skip
def test_bad_ids_are_refused_with_what_is_wrong(t: tracer.Trace, step_id: str, message: str) -> None:
    with pytest.raises(StepNotFound) as err:
        t[step_id]
    assert str(err.value) == message
    assert t.get(step_id) is None and step_id not in t


def test_an_unknown_node_name(t: tracer.Trace) -> None:
    with pytest.raises(StepNotFound) as err:
        t.node("stable.sun")
    assert str(err.value) == (
        "no step 'stable.sun' in this trace; did you mean stable.sum[i], stable.sum[i].s[j], stable.shift[i,j]?"
    )


def test_short_ids_are_slices(t: tracer.Trace) -> None:
    assert t["omega[2]"].id == "omega[2]" and not t["omega[2]"].is_element
    assert t["omega[2]"].value.shape == (6,)
    assert t["omega[2,1]"].is_element and t["omega"].value.shape == (6, 6)


def test_slices_name_their_inputs(t: tracer.Trace) -> None:
    """An axis a slice leaves free is left free in its inputs: omega[2] reads the products of query 2."""
    assert t["omega[2]"].inputs == ("omega[2].p",)
    assert t["alpha[2]"].inputs == ("stable.exp[2]", "stable.sum[2]")
    assert t["omega[2,1]"].inputs == ("omega[2,1].p[1]", "omega[2,1].p[2]", "omega[2,1].p[3]")
    assert t["omega[2,1].s[1]"].inputs == ("omega[2,1].p[1]",)  # the first running sum has no predecessor


def test_listed_and_expanded_steps_belong_to_the_trace(t: tracer.Trace) -> None:
    listed = list(t.steps(pattern="omega[2,1].p[*]"))
    assert [s.inputs for s in listed] == [(f"x[2,{k}]", f"x[1,{k}]") for k in (1, 2, 3)]
    scanned = list(t.steps(pattern="x[*]"))  # a * that may span commas: the scan, not the index ranges
    assert [s.id for s in scanned][:4] == ["x[1,1]", "x[1,2]", "x[1,3]", "x[2,1]"] and len(scanned) == 18
    expanded = list(t.expand(t["alpha[2]"]))
    assert [s.id for s in expanded] == [f"alpha[2,{j}]" for j in range(1, 7)]
    assert expanded[0].inputs == ("stable.exp[2,1]", "stable.sum[2]")
    assert [s.id for s in t.expand(t["alpha[2,1]"])] == ["alpha[2,1]"]
    assert list(t.steps(pattern="omega[2,1].q[*]")) == []


def test_values_are_floats_or_read_only_arrays(t: tracer.Trace) -> None:
    """``Step.value``: a Python float for an element, the node's float32 array (read-only) for a slice."""
    element, row = t["omega[2,1]"].value, t["omega[2]"].value
    assert type(element) is float and element == float(t.tensor("omega")[1, 0])
    assert isinstance(row, np.ndarray) and row.dtype == np.float32 and not row.flags.writeable
    with pytest.raises(ValueError):
        row[0] = 1.0


def test_a_slice_that_reads_before_the_start_has_no_inputs() -> None:
    """y[i,j] reads x[j, i-1], the row before it transposed: row 1 reads nothing (there is no row 0), even though
    the free axis j comes first in the read; row 2 reads column 1 of x, which no id can name, so all of x."""
    from tracer.core.trace import Node, Ref

    x = Node("x", "input", "s", ("i", "k"), (2,), np.arange(6.0).reshape(2, 3), ())
    y = Node("y", "copy", "s", ("i", "j"), (2,), np.zeros((3, 2)), (Ref("x", ("j", "i-1")),))
    t = tracer.Trace([x, y], {"dtype": "float64"})
    assert t["y[1]"].inputs == () and t["y[1,2]"].inputs == ()
    assert t["y[2]"].inputs == ("x",) and t["y[2,1]"].inputs == ("x[1,1]",)
