"""The mask a ``forward`` requires is given in the form its code reads: additive, boolean keep or boolean hide."""

from __future__ import annotations

import math
from typing import ClassVar

import pytest
import torch
import torch.nn as nn

import tracer
from tracer.compare.check import forwardargs
from tracer.compare.check.run import spec_for

X = torch.zeros(2, 5, 3)


def test_every_form_is_the_same_causal_mask() -> None:
    spec = spec_for("causal")
    add, keep, hide = (forwardargs.value(form, X, spec, 0) for form in forwardargs.MASKS)
    assert forwardargs.MASKS == ("mask", "mask_keep", "mask_hide")
    assert keep.dtype == hide.dtype == torch.bool and add.dtype == X.dtype
    assert torch.equal(hide, torch.ones(5, 5, dtype=torch.bool).triu(1)) and torch.equal(keep, ~hide)
    assert torch.equal(torch.isinf(add), hide) and bool((add[keep] == 0).all())
    assert forwardargs.value("mask_keep", X, spec_for("multihead"), 0).shape == (1, 1, 5, 5)


class Causal(nn.Module):
    """The lesson's causal head; ``masked`` is how each subclass applies the mask it is given.

    ``calls`` counts every call by the mask's dtype and size (work done).
    """

    calls: ClassVar[list[tuple[str, int]]] = []

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        Causal.calls.append((str(mask.dtype).removeprefix("torch."), int(mask.shape[-1])))
        s = self.W_query(x) @ self.W_key(x).transpose(1, 2) / math.sqrt(self.W_key.out_features)
        return self.drop(self.after(torch.softmax(self.masked(s, mask), dim=-1), mask)) @ self.W_value(x)

    def masked(self, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return s + mask

    def after(self, w: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return w


class Keep(Causal):
    """The Annotated Transformer's reading: 0 (False) where a token may not look."""

    def masked(self, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return s.masked_fill(mask == 0, -1e9)


class Hide(Causal):
    """torch's boolean attn_mask: True where a token is hidden (a float mask makes masked_fill raise)."""

    def masked(self, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return s.masked_fill(mask, -math.inf)


class Ignored(Causal):
    def masked(self, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return s


class AfterSoftmax(Ignored):
    """Keeps with ``mask == 0`` as Keep does, but on the weights after the softmax (no renormalising)."""

    def after(self, w: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return w.masked_fill(mask == 0, 0.0)


class BothReadings(Causal):
    """Hides where ``mask == 0`` and again where the mask is set: every caller's mask shuts every place."""

    def masked(self, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return s.masked_fill(mask == 0, -1e9).masked_fill(mask.bool(), -1e9)


class Transposed(Causal):
    """Reads a keep mask the wrong way round in the other sense: keys after the query, not before it."""

    def masked(self, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return s.masked_fill(mask.transpose(-1, -2) == 0, -1e9)


@pytest.mark.parametrize(("cls", "form"), [(Causal, "mask"), (Keep, "mask_keep"), (Hide, "mask_hide")])
def test_correct_code_gets_the_form_it_reads(cls: type[Causal], form: str) -> None:
    r = tracer.check(cls, lesson="causal")
    assert r.ok, r.explain("en")
    assert r.given == {"mask": form} and r.notes[0] == f"given_{form}"
    assert r.to_json()["given"] == {"mask": form}
    said = {"mask": "additive", "mask_keep": "keep mask", "mask_hide": "boolean attn_mask"}[form]
    assert said in " ".join(r.explain("en").split()) and "因果掩码" in r.explain("zh")


def test_the_tried_forms_are_counted_and_the_chosen_one_is_used_everywhere() -> None:
    Causal.calls = []
    assert tracer.check(Keep, lesson="causal").ok
    # additive tried (no match), keep tried (a match); then eval, train on 6 tokens, the shorter run on 4,
    # the second build on 7 in both modes, every one of them with the keep mask
    assert Causal.calls == [
        ("float32", 6),
        ("bool", 6),
        ("bool", 6),
        ("bool", 6),
        ("bool", 4),
        ("bool", 7),
        ("bool", 7),
    ]


def test_a_forward_without_a_mask_is_called_as_before() -> None:
    class Plain(Causal):
        def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            return super().forward(x, torch.ones(x.shape[1], x.shape[1]).triu(1).bool())

        masked = Hide.masked

    Causal.calls = []
    r = tracer.check(Plain, lesson="causal")
    assert r.ok and r.given == {} and len(Causal.calls) == 5  # eval, train, shorter, the second build twice


@pytest.mark.parametrize(
    ("cls", "form", "diagnosis"),
    [
        (Ignored, "mask", "mask_missing"),  # three identical outputs: the additive form, as before
        (AfterSoftmax, "mask_keep", "mask_after_softmax"),  # nearest with the mask it reads: its mistake named
        # its first masked_fill (mask == 0, filled with -1e9) hides exactly the keys the lesson keeps: a -1e9 fill
        # is a hidden key as -inf is, so that intermediate is the inverted mask's scores, and it is named
        (BothReadings, "mask", "mask_inverted"),
        (Transposed, "mask_keep", None),
    ],
)
def test_wrong_code_is_wrong_under_every_form(cls: type[Causal], form: str, diagnosis: str | None) -> None:
    r = tracer.check(cls, lesson="causal")
    assert not r.ok and r.given == {"mask": form}
    assert r.diagnosis == diagnosis
