"""The recorder's primitives on small tensors whose every node is worked out by hand.

The lesson oracles (``test_reference.py``, ``test_formulas.py``) check the
recorder through whole pipelines; these tests pin what each primitive
records (values, ops, operand references, axes, splits, attributes) where a
pipeline does not show it, such as the helpers the torch capture reads.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tracer.core.trace import Ref
from tracer.record.recorder import Recorder


def _dot() -> Recorder:
    """omega[i,j] = sum_k x[i,k] x[j,k] for x = [[1, 2, 3], [4, 5, 6]]."""
    rec = Recorder(torch.float64)
    with rec.stage("inputs"):
        x = rec.input("x", torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), "ik", symbol="x_{<i><k>}")
    with rec.stage("scores"):
        rec.contract("omega", x("i", "k"), x("j", "k"), "ijk", "k", symbol="w", latex="L", text="T")
    return rec


def test_value_is_the_last_recording_and_last_takes_the_final_entry_of_an_axis() -> None:
    rec = _dot()
    sums = rec.value("omega.s")
    assert sums.tolist()[1][0] == [4.0, 14.0, 32.0]
    assert rec.value("omega.s", last="k").tolist() == [[14.0, 32.0], [32.0, 77.0]]
    assert rec.value("omega.p", last="i").tolist() == [[4.0, 10.0, 18.0], [16.0, 25.0, 36.0]]
    assert rec.value("omega").tolist() == [[14.0, 32.0], [32.0, 77.0]]
    with pytest.raises(KeyError):
        rec.value("nothing")


def test_var_gives_back_a_recorded_node() -> None:
    rec = _dot()
    v = rec.var("omega.p")
    assert (v.name, v.axes, v.symbol) == ("omega.p", ("i", "j", "k"), "omega.p")
    assert np.array_equal(v.data.numpy(), rec.trace({}).node("omega.p").value)
    with pytest.raises(KeyError):
        rec.var("nothing")


def test_contract_records_products_running_sums_and_totals() -> None:
    t = _dot().trace({})
    p, s, total = t.node("omega.p"), t.node("omega.s"), t.node("omega")
    assert (p.op, s.op, total.op) == ("mul", "acc", "sum")
    assert p.args == (Ref("x", ("i", "k")), Ref("x", ("j", "k")))
    assert s.args == (Ref("omega.s", ("i", "j", "k-1")), Ref("omega.p", ("i", "j", "k")))
    assert total.args == (Ref("omega.p", ("i", "j", "*")),)
    assert total.attrs == {"over": "k", "partials": "omega.s"}
    assert s.attrs == {"over": "k"}
    assert (p.stage, s.stage, total.stage, t.node("x").stage) == ("scores", "scores", "scores", "inputs")
    assert (p.split, s.split, total.split) == ((2, 1), (2, 1), (2,))
    assert (total.latex, total.text) == ("L", "T")
