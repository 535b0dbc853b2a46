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
    with pytest.raises(KeyError, match="nothing"):
        rec.value("nothing")


def test_var_gives_back_a_recorded_node() -> None:
    rec = _dot()
    v = rec.var("omega.p")
    assert (v.name, v.axes, v.symbol) == ("omega.p", ("i", "j", "k"), "omega.p")
    assert np.array_equal(v.data.numpy(), rec.trace({}).node("omega.p").value)
    with pytest.raises(KeyError, match="nothing"):
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
    assert (p.value.dtype, s.value.dtype, total.value.dtype) == (np.float64, np.float64, np.float64)  # the recorder's


def test_contract_of_one_operand_sums_it_without_products() -> None:
    rec = Recorder(torch.float64)
    e = rec.input("e", torch.tensor([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]]), "ij", symbol="e")
    rec.contract("row.S", e("i", "j"), None, "ij", "j", symbol="S", latex="", text="", parts=("p", "r"))
    t = rec.trace({})
    assert [n.name for n in t.nodes] == ["e", "row.S.r", "row.S"]
    assert t.node("row.S.r").value.tolist() == [[1.0, 3.0, 7.0], [8.0, 24.0, 56.0]]
    assert t.node("row.S.r").args == (Ref("row.S.r", ("i", "j-1")), Ref("e", ("i", "j")))
    assert t.node("row.S").value.tolist() == [7.0, 56.0]
    assert t.node("row.S").args == (Ref("e", ("i", "*")),)
    assert (t.node("row.S.r").split, t.node("row.S").split) == ((0, 1, 1), (0, 1))  # row.S[i].r[j]


def test_contract_lays_out_the_reduced_axis_where_axes_put_it() -> None:
    """The products of x[i,k]·x[j,k] with k first: p[k,i,j]; the sums run along k, the first axis."""
    rec = Recorder(torch.float64)
    x = rec.input("x", torch.tensor([[1.0, 2.0], [3.0, 5.0]]), "ik", symbol="x")
    rec.contract("g", x("i", "k"), x("j", "k"), "kij", "k", symbol="g", latex="", text="", parts=("t", "u"))
    t = rec.trace({})
    assert t.node("g.t").axes == ("k", "i", "j")
    assert t.node("g.t").value.tolist() == [[[1.0, 3.0], [3.0, 9.0]], [[4.0, 10.0], [10.0, 25.0]]]
    assert t.node("g.u").value.tolist() == [[[1.0, 3.0], [3.0, 9.0]], [[5.0, 13.0], [13.0, 34.0]]]
    assert t.node("g.u").args == (Ref("g.u", ("k-1", "i", "j")), Ref("g.t", ("k", "i", "j")))
    assert (t.node("g.t").split, t.node("g").split) == ((0, 3), (2,))
    assert t.node("g").value.tolist() == [[5.0, 13.0], [13.0, 34.0]]


def test_contract_takes_a_given_total_and_refuses_one_of_the_wrong_shape() -> None:
    rec = Recorder(torch.float64)
    x = rec.input("x", torch.tensor([[1.0, 2.0]]), "ik", symbol="x")
    given = torch.tensor([[4.5]], dtype=torch.float64)
    rec.contract("w", x("i", "k"), x("j", "k"), "ijk", "k", symbol="w", latex="", text="", total=given, attrs={"a": 1})
    t = rec.trace({})
    assert t.node("w").value.tolist() == [[4.5]]
    assert t.node("w.s").value.tolist() == [[[1.0, 5.0]]]
    assert t.node("w").attrs == {"a": 1, "over": "k", "partials": "w.s"}
    with pytest.raises(ValueError, match=r"w2: total of shape \(1,\) for sums of shape \(1, 1\)"):
        rec.contract("w2", x("i", "k"), x("j", "k"), "ijk", "k", symbol="", latex="", text="", total=torch.zeros(1))
    with pytest.raises(ValueError, match="w3: axis 'k' is not among"):
        rec.contract("w3", x("i", "k"), x("j", "k"), "ij", "k", symbol="", latex="", text="")
    with pytest.raises(ValueError, match="axis 'q' is not read by any operand"):
        rec.contract("w4", x("i", "k"), x("j", "k"), "ijqk", "k", symbol="", latex="", text="")


def test_elementwise_ops_broadcast_and_record_their_operands() -> None:
    rec = Recorder(torch.float32)
    a = rec.input("a", torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "ij", symbol="a")
    b = rec.input("b", torch.tensor([2.0, 8.0]), "i", symbol="b")
    got = {
        op: rec.elementwise(op, f"r.{op}", [a("i", "j"), b("i")], "ij", symbol="", latex="", text="").data.tolist()
        for op in ("mul", "add", "sub", "div")
    }
    assert got == {
        "mul": [[2.0, 4.0], [24.0, 32.0]],
        "add": [[3.0, 4.0], [11.0, 12.0]],
        "sub": [[-1.0, 0.0], [-5.0, -4.0]],
        "div": [[0.5, 1.0], [0.375, 0.5]],
    }
    t = rec.trace({})
    assert t.node("r.div").args == (Ref("a", ("i", "j")), Ref("b", ("i",)))
    assert (t.node("r.div").op, t.node("r.div").split, t.node("r.div").attrs) == ("div", (0, 2), {})
    e = rec.elementwise("exp", "e", [b("i")], "i", symbol="", latex="", text="")
    assert e.data.tolist() == [np.float32(np.exp(2.0)), np.float32(np.exp(8.0))]
    rec.elementwise("mul", "s.t", [a("i", "j"), b("i")], "ij", symbol="", latex="", text="", split=(1, 1))
    assert rec.trace({}).node("s.t").split == (1, 1)  # s[i].t[j]: one axis per id segment
    with pytest.raises(ValueError, match="unknown elementwise op 'exp' with 2 operands"):
        rec.elementwise("exp", "bad", [a("i", "j"), b("i")], "ij", symbol="", latex="", text="")
    with pytest.raises(ValueError, match="unknown elementwise op 'pow' with 2 operands"):
        rec.elementwise("pow", "bad", [a("i", "j"), b("i")], "ij", symbol="", latex="", text="")


def test_masked_fill_puts_fill_where_the_mask_is_not_zero() -> None:
    rec = Recorder(torch.float64)
    s = rec.input("s", torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "ij", symbol="s")
    m = rec.input("m", torch.tensor([[0.0, 1.0], [0.0, 0.0]]), "ij", symbol="m")
    out = rec.elementwise("masked_fill", "f", [s("i", "j"), m("i", "j")], "ij", symbol="", latex="", text="")
    assert out.data.tolist() == [[1.0, float("-inf")], [3.0, 4.0]]
    rec.elementwise("masked_fill", "g", [s("i", "j"), m("i", "j")], "ij", symbol="", latex="", text="", fill=0.5)
    t = rec.trace({})
    assert t.node("f").attrs == {"fill": "-inf"}
    assert t.node("g").value.tolist() == [[1.0, 0.5], [3.0, 4.0]]
    assert t.node("g").attrs == {"fill": "0.5"}


def test_max_and_softmax_read_a_whole_row() -> None:
    rec = Recorder(torch.float64)
    s = rec.input("s", torch.tensor([[1.0, 5.0, 2.0], [0.0, -1.0, -3.0]]), "ij", symbol="s")
    m = rec.max("m", s("i", "j"), "j", symbol="", latex="ML", text="MT")
    assert m.data.tolist() == [5.0, 0.0]
    cols = rec.max("c", s("i", "j"), "i", symbol="", latex="", text="")
    assert cols.data.tolist() == [1.0, 5.0, 2.0]
    sm = rec.softmax("p", s("i", "j"), "j", symbol="", latex="PL", text="PT")
    assert np.allclose(sm.data.sum(dim=1).numpy(), 1.0)
    assert sm.data[0, 1] > sm.data[0, 2] > sm.data[0, 0]
    t = rec.trace({})
    assert (t.node("m").op, t.node("m").axes, t.node("m").args) == ("max", ("i",), (Ref("s", ("i", "*")),))
    assert (t.node("c").axes, t.node("c").args, t.node("c").attrs) == (("j",), (Ref("s", ("*", "j")),), {"over": "i"})
    p = t.node("p")
    assert (p.op, p.axes, p.args, p.attrs) == ("softmax", ("i", "j"), (Ref("s", ("i", "*")),), {"over": "j"})
    assert (t.node("m").latex, t.node("m").text, p.latex, p.text) == ("ML", "MT", "PL", "PT")


def test_reading_an_operand() -> None:
    rec = Recorder(torch.float64)
    x = rec.input("x", torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), "ik", symbol=r"x_{<i><k>}")
    assert x.all.index == ("i", "k")
    assert x("k", "i").symbol == "x_{<k><i>}"
    assert x("k", "i").aligned(("i", "k")).tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert x("i", "k").aligned(("k", "q", "i")).shape == (3, 1, 2)
    assert x("2", "k").aligned(("k",)).tolist() == [4.0, 5.0, 6.0]
    assert x("i", "3").aligned(("i",)).tolist() == [3.0, 6.0]
    with pytest.raises(ValueError, match=r"x has 2 axes, got index \('i',\)"):
        x("i")
    with pytest.raises(ValueError, match=r"x\('i', 'i'\): repeated axis"):
        x("i", "i").aligned(("i",))
    with pytest.raises(ValueError, match=r"x: axes \['k'\] are not among \('i',\)"):
        x("i", "k").aligned(("i",))


def test_leaves_tensors_and_library_results() -> None:
    rec = Recorder(torch.float32)
    with rec.stage("outer"):
        with rec.stage("inner"):
            c = rec.constant("c", 0.1, symbol="c", text="one tenth")
        x = rec.input("x", torch.tensor([[1, 2]]), "ik", symbol="X", text="xt", attrs={"given": True})
    lib = rec.apply(
        "argmax",
        "idx",
        torch.tensor([1]),
        [Ref("x", ("i", "*"))],
        "i",
        latex="AL",
        text="AT",
        attrs={"dim": 1},
        granularity="tensor",
    )
    whole = rec.tensor("t", "matmul", torch.tensor([[5.0]], dtype=torch.float64), [x, c], "ij", latex="TL", text="TT")
    t = rec.trace({"lesson": "none"})
    assert t.meta["lesson"] == "none"
    assert [n.stage for n in t.nodes] == ["inner", "outer", "main", "main"]
    assert t.node("c").value.dtype == np.float32 and float(t.node("c").value) == float(np.float32(0.1))
    assert (t.node("c").op, t.node("c").latex, t.node("c").text, t.node("c").axes) == ("const", "c", "one tenth", ())
    xn = t.node("x")
    assert (xn.op, xn.latex, xn.text, xn.attrs) == ("input", "X", "xt", {"given": True})
    assert xn.value.dtype == np.float32
    assert x.data.dtype == torch.float32 and x.data.is_contiguous()
    assert (lib.data.dtype, t.node("idx").granularity, t.node("idx").latex) == (torch.float32, "tensor", "AL")
    assert (t.node("idx").op, t.node("idx").args) == ("argmax", (Ref("x", ("i", "*")),))
    assert (t.node("idx").text, t.node("idx").attrs) == ("AT", {"dim": 1})
    assert (whole.data.dtype, t.node("t").granularity, t.node("t").args) == (
        torch.float32,
        "tensor",
        (Ref("x"), Ref("c")),
    )
    assert (t.node("t").op, t.node("t").latex, t.node("t").text) == ("matmul", "TL", "TT")


def test_apply_keeps_a_float_result_as_given() -> None:
    rec = Recorder(torch.float32)
    v = rec.apply("copy", "y", torch.tensor([0.1], dtype=torch.float64), [], "i")
    assert v.data.dtype == torch.float64
    y = rec.trace({}).node("y")
    assert (y.granularity, y.latex, y.text, y.symbol, y.attrs, v.symbol) == ("element", "", "", "", {}, "y")


def test_maxabsdiff_records_the_largest_difference_and_its_bound() -> None:
    rec = Recorder(torch.float64)
    a = rec.input("a", torch.tensor([1.0, 2.0, 3.0]), "i", symbol="a")
    b = rec.input("b", torch.tensor([1.5, 1.0, 3.25]), "i", symbol="b")
    d = rec.maxabsdiff("d", a, b, latex="DL", text="DT", bound=np.array([1.234e-7, 1e-9]))
    assert float(d.data) == 1.0
    rec.maxabsdiff("e", a, b, latex="", text="")
    empty = rec.input("z", torch.zeros(0), "i", symbol="z")
    rec.maxabsdiff("f", empty, empty, latex="", text="", bound=np.zeros(0))
    t = rec.trace({})
    n = t.node("d")
    assert (n.op, n.axes, n.granularity, n.args, n.latex, n.text) == (
        "maxabsdiff",
        (),
        "tensor",
        (Ref("a"), Ref("b")),
        "DL",
        "DT",
    )
    assert n.attrs == {"bound": 1.3e-7}
    assert t.node("e").attrs == {}
    assert (float(t.node("f").value), t.node("f").attrs) == (0.0, {"bound": 0.0})


def test_every_primitive_stores_the_symbol_of_its_entries() -> None:
    """An entry's symbol is stored as given; a product and a running sum are named by their formulas; a tensor-level
    step names no entry, though the var it returns keeps the symbol (or its name) for a later formula."""
    rec = Recorder(torch.float64)
    x = rec.input("x", torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "ik", symbol="x_{<i><k>}")
    c = rec.constant("c", 2.0, symbol="c", text="")
    got = {
        "x": x,
        "c": c,
        "e": rec.elementwise("mul", "e", [x("i", "k"), c()], "ik", symbol="cx_{<i><k>}", latex="", text=""),
        "m": rec.max("m", x("i", "k"), "k", symbol="m_{<i>}", latex="", text=""),
        "p": rec.softmax("p", x("i", "k"), "k", symbol="p_{<i><k>}", latex="", text=""),
        "a": rec.apply("copy", "a", x.data, [Ref("x", ("i", "k"))], "ik", symbol="a_{<i><k>}"),
        "w": rec.contract(
            "w", x("i", "k"), x("j", "k"), "ijk", "k", symbol="w_{<i,j>}", latex="", text="", part_latex=("P", "S")
        ),
        "t": rec.tensor("t", "matmul", x.data, [x], "ik", latex="T = X", text="", symbol="T"),
        "u": rec.tensor("u", "matmul", x.data, [x], "ik", latex="U = X", text=""),
    }
    symbols = {"x": "x_{<i><k>}", "c": "c", "e": "cx_{<i><k>}", "m": "m_{<i>}", "p": "p_{<i><k>}", "a": "a_{<i><k>}"}
    assert {name: var.symbol for name, var in got.items()} == {**symbols, "w": "w_{<i,j>}", "t": "T", "u": "u"}
    t = rec.trace({})
    stored = {n.name: n.symbol for n in t.nodes}
    assert stored == {**symbols, "w.p": "P", "w.s": "S", "w": "w_{<i,j>}", "t": "", "u": ""}
    assert t["w[2,1]"].symbol == "w_{21}"
    assert (t.node("x").text, t.node("x").latex) == ("", "x_{<i><k>}")  # an input's formula is its symbol


def test_a_constant_takes_the_trace_dtype() -> None:
    """In a float64 trace sqrt(2) is stored to float64's precision, not rounded through torch's float32 default."""
    rec = Recorder(torch.float64)
    c = rec.constant("root", 2.0**0.5, symbol="r", text="sqrt(2)")
    node = rec.trace({}).node("root")
    assert c.data.dtype == torch.float64 and node.value.dtype == np.float64
    assert float(node.value) == 1.4142135623730951
