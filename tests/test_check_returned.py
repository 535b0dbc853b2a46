"""``check`` reads a tuple returned by ``forward`` as its callers do: the first element is the output."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn as nn

import tracer
from tracer.compare.check import student
from tracer.compare.check.decode import decode
from tracer.compare.check.evidence import Evidence, Malformed, encode


class Heads(nn.Module):
    """The lesson's two causal heads in one layer; ``shape`` says what forward returns around the output."""

    shape = "tensor"

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int) -> None:
        super().__init__()
        self.h, self.d = num_heads, d_out // num_heads
        self.q_proj = nn.Linear(d_in, d_out, bias=False)
        self.k_proj = nn.Linear(d_in, d_out, bias=False)
        self.v_proj = nn.Linear(d_in, d_out, bias=False)
        self.o_proj = nn.Linear(d_out, d_out)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> object:
        b, t, _ = x.shape
        q, k, v = (p(x).view(b, t, self.h, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = (q @ k.transpose(-1, -2) / math.sqrt(self.d)).masked_fill(torch.ones(t, t).triu(1).bool(), -math.inf)
        w = self.drop(torch.softmax(s, dim=-1))
        out = self.o_proj((w @ v).transpose(1, 2).reshape(b, t, -1))
        return {
            "tensor": out,
            "weights": (out, w),
            "none": (out, None),
            "list": [out, (k, v)],
            "swapped": (w, out),
        }[self.shape]


def _of(shape: str) -> type[Heads]:
    return type(f"Heads_{shape}", (Heads,), {"shape": shape})


@pytest.mark.parametrize("shape", ["weights", "none", "list"])
def test_a_tuple_or_list_is_read_at_its_first_element(shape: str) -> None:
    r = tracer.check(_of(shape), lesson="multihead")
    assert r.ok, r.explain("en")
    assert "returned_tuple" in r.notes
    assert "returned a tuple" in r.explain("en") and "返回了一个元组" in r.explain("zh")


def test_a_tensor_returned_gets_no_note() -> None:
    r = tracer.check(_of("tensor"), lesson="multihead")
    assert r.ok and "returned_tuple" not in r.notes


def test_the_weights_first_are_still_the_weights_returned() -> None:
    r = tracer.check(_of("swapped"), lesson="multihead")
    assert not r.ok and r.diagnosis is not None and r.diagnosis == "returns_weights"


def test_only_a_tuple_that_starts_with_a_tensor_is_unpacked() -> None:
    t = torch.zeros(2)
    assert student.returned((t, None)) is t and student.returned([t]) is t
    assert student.returned((None, t)) == (None, t) and student.returned(()) == ()
    with pytest.raises(tracer.InputError, match="returned dict, not a tensor"):
        student.output_array({"out": t}, "A")


def test_what_was_returned_crosses_the_pipe_and_nothing_else() -> None:
    ev = Evidence("A", returned="tuple")
    assert decode(copy.deepcopy(encode(ev))).returned == "tuple"
    forged = encode(ev)
    forged["returned"] = "dict"
    with pytest.raises(Malformed):
        decode(forged)
