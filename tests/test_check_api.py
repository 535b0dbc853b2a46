"""``tracer.check`` from Python: the result object a teacher's test suite asserts on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn

import tracer
from tracer.compare.check.student import load

CORPUS = Path(__file__).parent / "check_corpus"


class Causal(nn.Module):
    """The book's causal module, with a dropout that can be swapped for a hand-written one."""

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.p = dropout
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def drop(self, w: torch.Tensor) -> torch.Tensor:
        return nn.functional.dropout(w, self.p, self.training)

    def weights(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = (q @ k.transpose(1, 2)).masked_fill(self.mask.bool()[:t, :t], -torch.inf)
        return torch.softmax(s / k.shape[-1] ** 0.5, dim=-1), v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, v = self.weights(x)
        return self.drop(w) @ v


class OtherDraws(Causal):
    """A correct dropout whose mask comes from torch.rand: another draw order than nn.Dropout's."""

    def drop(self, w: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return w
        keep = (torch.rand(w.shape) >= self.p).float()
        return w * keep / (1 - self.p)


class ReturnsWeights(Causal):
    """Computes the context vectors but returns the weights."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, v = self.weights(x)
        w = self.drop(w)
        _ = w @ v
        return w


def test_ok_result() -> None:
    r = tracer.check(Causal, lesson="causal")
    assert r.ok and r.first_divergence is None and r.diagnosis is None
    assert "MATCHES the lesson at every stage" in r.explain("en")
    assert [x.role for x in r.roles] == ["W_query", "W_key", "W_value"]
    assert all(s.status in ("match", "skipped") for s in r.stages)


def test_other_draw_order_is_not_compared() -> None:
    r = tracer.check(OtherDraws, lesson="causal")
    assert r.ok
    (dropped,) = [s for s in r.stages if s.quantity.run == "train"]
    assert dropped.status == "not compared" and dropped.note == "draws"
    assert "another order than the lesson" in r.explain("en")


def test_returning_something_else_is_a_divergence() -> None:
    r = tracer.check(ReturnsWeights, lesson="causal")
    assert not r.ok and r.first_divergence is not None
    assert r.first_divergence.quantity == "z" and r.first_divergence.stage == "context"
    assert "returns something else" in r.explain("en")


def test_divergence_names_element_values_and_line() -> None:
    obj, source = load(f"{CORPUS / 'trainable_noscale.py'}:SelfAttention")
    r = tracer.check(obj, lesson="trainable", source=source)
    d = r.first_divergence
    assert d is not None and d.stage == "scaling" and d.step == "scaled"
    assert d.element.startswith("scaled[") and d.student is not None  # where the weights differ most
    assert d.reference == pytest.approx(r.trace[d.element].value)
    unscaled = d.element.replace("scaled", "omega")
    assert d.student == pytest.approx(r.trace[unscaled].value, rel=1e-5)  # the unscaled score
    assert d.student_id == "attn_weights.matmul" and d.student_step == unscaled.replace("omega", "attn_weights.matmul")
    assert r.student is not None and r.student[d.student_step].value == pytest.approx(d.student)
    assert r.diagnosis == "scale_missing" and r.consequences == ["weights", "context"]
    assert "√d_k" in r.explain("zh") and "没有把注意力分数除以" in r.explain("zh")


def test_fused_projection_roles() -> None:
    obj, source = load(f"{CORPUS / 'multihead_fused.py'}:FusedMHA")
    r = tracer.check(obj, lesson="multihead", source=source)
    assert r.ok
    assert [(x.role, x.param) for x in r.roles] == [
        ("W_query", "qkv.weight[0:8]"),
        ("W_key", "qkv.weight[8:16]"),
        ("W_value", "qkv.weight[16:24]"),
        ("W_out", "proj.weight"),
        ("b_out", "proj.bias"),
    ]


def test_reference_uses_the_students_weights() -> None:
    obj, source = load(f"{CORPUS / 'trainable_prescaled.py'}:Attention")
    r = tracer.check(obj, lesson="trainable", source=source)
    assert r.ok  # randn weights, not the lesson's rand ones: a different init is not a mistake
    wq = r.trace.tensor("W_query")
    assert wq.shape == (3, 2) and not torch.allclose(torch.tensor(wq), torch.rand(3, 2))


def test_unknown_lesson() -> None:
    with pytest.raises(tracer.InputError, match="unknown lesson"):
        tracer.check(Causal, lesson="nope")


def test_simple_wants_a_function() -> None:
    with pytest.raises(tracer.InputError, match="checks a function"):
        tracer.check(Causal, lesson="simple")


def test_a_hiding_fill_is_the_same_hidden_key_as_minus_infinity() -> None:
    """-1e4 and below (BERT's -10000, d2l's -1e6, -1e9, finfo.min) hide a key as -inf does; -10 does not."""
    import numpy as np

    from tracer.compare.check import align

    ref = np.array([1.0, -np.inf, -np.inf, -np.inf])
    assert align.close(np.array([1.0, -1e4, -1e9, np.finfo(np.float32).min]), ref)
    assert not align.close(np.array([1.0, -10.0, -1e9, -1e9]), ref)
    assert not align.close(np.array([-1e6, -1e6, -1e6, -1e6]), ref)  # a visible score is never hidden
    assert align.error(np.array([1.0, -1e6, -np.inf, -1e9]), ref) == 0.0
