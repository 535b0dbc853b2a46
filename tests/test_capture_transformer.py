"""A transformer block of the book's next chapter traces end to end; unsupported ops are opaque and listed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tracer
from tests import book_transformer as book


@pytest.mark.parametrize("name", ["block", "block_library", "tiny_gpt"])
def test_traces_end_to_end_and_changes_nothing(name: str) -> None:
    runner = getattr(book, name)
    plain = runner()
    t = tracer.trace_torch(runner)
    assert np.array_equal(t.tensor(t.meta["output"]), plain.detach().numpy())
    for node in t.nodes:  # every recorded value is finite and every reference resolves
        step = t[node.name] if node.granularity != "element" or not node.axes else t.get(node.name)
        assert step is not None
        assert all(t.get(i) is not None for i in (next(t.expand(step)).inputs if node.axes else step.inputs))


def test_the_students_layer_norm_and_gelu_are_steps() -> None:
    t = tracer.trace_torch(book.block)
    assert t.meta["opaque"] == []
    # LayerNorm: mean, var (step by step beside torch's), the normalized value; GELU's tanh form
    assert t.node("norm1.var").op == "var" and t.node("norm1.var.ss").op == "sum"
    assert t.node("norm1.norm_x").op == "div"
    x, mean = t.tensor("x"), t.tensor("norm1.mean")
    assert np.allclose(mean, x.mean(axis=-1), atol=1e-6)
    assert any(n.op == "tanh" for n in t.nodes if n.name.startswith("ff."))
    # dropout in training mode drew masks: recorded with the scale 1/(1-0.1)
    keeps = [n for n in t.nodes if n.name.endswith(".keep")]
    assert keeps and all(set(np.unique(n.value)) <= {0.0, 1.0} for n in keeps)


def test_torch_layer_norm_and_gelu_are_decomposed_too() -> None:
    t = tracer.trace_torch(book.block_library)
    assert t.meta["opaque"] == []
    ln = next(n for n in t.nodes if n.op == "layer_norm")
    steps = t.tensor(f"{ln.name}.shifted")
    np.testing.assert_allclose(t.tensor(ln.name), steps, rtol=1e-5, atol=1e-6)
    g = next(n for n in t.nodes if n.op == "gelu")
    np.testing.assert_allclose(t.tensor(g.name), t.tensor(f"{g.name}.prod"), rtol=1e-5, atol=1e-6)
    assert t.node(f"check.{g.name}").value < 1e-5


def test_embeddings_are_look_ups_and_unsupported_ops_are_opaque_and_listed_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with tracer.capture() as cap:
        out = book.tiny_gpt()
    assert cap.warnings == [] and "recorded as opaque steps" not in capsys.readouterr().err
    looked = [n for n in cap.trace.nodes if n.attrs.get("func") == "embedding"]
    assert looked and all(n.op == "lookup" for n in looked)
    assert torch.equal(out, book.tiny_gpt())
    x = torch.rand(4, 3)
    with tracer.capture() as cap:
        torch.cumsum(x, 0) + torch.cumsum(x, 1)
    err = capsys.readouterr().err
    assert err.count("recorded as opaque steps") == 1 and "cumsum" in err
    assert cap.warnings == ["cumsum"]
    opaque = [n for n in cap.trace.nodes if n.op == "opaque"]
    assert len(opaque) == 2 and all(n.granularity == "tensor" and n.args for n in opaque)
