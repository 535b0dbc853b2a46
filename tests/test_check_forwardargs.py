"""The arguments ``check`` passes a ``forward`` beyond the tokens (positions, rotary tables, the mask, flags)."""

from __future__ import annotations

import copy
import math
from typing import ClassVar

import numpy as np
import pytest
import torch
import torch.nn as nn

import tracer
from tracer.compare.check import forwardargs, resizeref
from tracer.compare.check.decode import decode
from tracer.compare.check.evidence import Evidence, Malformed, encode
from tracer.compare.check.run import spec_for
from tracer.errors import InputError

X = torch.zeros(2, 5, 3)


def _half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def _lesson(x: np.ndarray, style: str) -> np.ndarray:
    """The lesson's own rotation of ``x`` (T, d), positions from 0."""
    t, d = x.shape
    angle = np.arange(t)[:, None] * resizeref.BASE ** (-2.0 * np.arange(d // 2) / d)[None, :]
    return resizeref.turn(x, np.cos(angle), np.sin(angle), style)


def test_cos_and_sin_turn_as_the_lesson_does_in_either_style() -> None:
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1))
    for style in ("half", "interleaved"):
        spec = spec_for("rope", rope_style=style)
        cos, sin = (forwardargs.value(k, X, spec, 6)[0] for k in ("cos", "sin"))
        assert cos.shape == (5, 6)
        if style == "half":
            turned = x * cos + _half(x) * sin
        else:  # neighbours: (-x2, x1, -x4, x3 …)
            partner = torch.stack((-x[:, 1::2], x[:, 0::2]), dim=-1).flatten(-2)
            turned = x * cos + partner * sin
        assert np.allclose(turned.numpy(), _lesson(x.double().numpy(), style), atol=1e-6)


def test_the_pair_is_cos_then_sin_and_freqs_cis_is_complex() -> None:
    spec = spec_for("rope")
    cos, sin = forwardargs.value("cos_sin", X, spec, 4)
    assert torch.equal(cos, forwardargs.value("cos", X, spec, 4)) and torch.equal(
        sin, forwardargs.value("sin", X, spec, 4)
    )
    f = forwardargs.value("freqs_cis", X, spec, 4)
    assert f.shape == (5, 2) and f.is_complex()
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(2))
    turned = torch.view_as_real(torch.view_as_complex(x.reshape(5, 2, 2)) * f).flatten(-2)
    assert np.allclose(turned.numpy(), _lesson(x.double().numpy(), "interleaved"), atol=1e-6)


def test_positions_start_at_zero_in_the_form_each_name_takes() -> None:
    spec = spec_for("rope")
    assert forwardargs.value("position_ids", X, spec, 4).tolist() == [[0, 1, 2, 3, 4]] * 2
    assert forwardargs.value("positions", X, spec, 4).tolist() == [0, 1, 2, 3, 4]
    assert forwardargs.value("start", X, spec, 4) == 0


def test_the_mask_is_additive_and_shaped_for_one_head_or_many() -> None:
    one = forwardargs.value("mask", X, spec_for("causal"), 0)
    many = forwardargs.value("mask", X, spec_for("multihead"), 0)
    assert one.shape == (5, 5) and many.shape == (1, 1, 5, 5) and one.dtype == X.dtype
    assert torch.equal(one.bool(), torch.ones(5, 5, dtype=torch.bool).triu(1))  # the book's reading
    assert torch.equal(torch.isinf(one), one.bool()) and bool((one[~one.bool()] == 0).all())


def test_only_required_parameters_are_given() -> None:
    class Optional(nn.Module):
        def forward(self, x, attn_mask=None, is_causal=True, *, use_cache=False):  # type: ignore[no-untyped-def]
            return x

    assert forwardargs.bind(Optional(), spec_for("causal")) == (None, {})


def test_keyword_only_parameters_are_passed_by_keyword() -> None:
    class Meta(nn.Module):
        def forward(self, x, start_pos, *, mask):  # type: ignore[no-untyped-def]
            return x

    arguments, given = forwardargs.bind(Meta(), spec_for("causal"))
    assert given == {"start_pos": "start", "mask": "mask"} and arguments is not None
    args, kwargs = arguments(X)
    assert args[0] is X and args[1] == 0 and list(kwargs) == ["mask"] and kwargs["mask"].shape == (5, 5)


@pytest.mark.parametrize(("lesson", "name"), [("rope", "freqs"), ("causal", "cos"), ("multihead", "freqs_cis")])
def test_an_unknown_parameter_is_one_line_naming_it(lesson: str, name: str) -> None:
    space: dict[str, object] = {"nn": nn}
    exec(f"class Wants(nn.Module):\n    def forward(self, x, {name}):\n        return x\n", space)
    wants = space["Wants"]
    assert isinstance(wants, type)
    with pytest.raises(InputError) as e:
        forwardargs.bind(wants(), spec_for(lesson))
    said = str(e.value)
    assert "\n" not in said and f"requires {name}," in said and f"lesson {lesson} calls forward(x)" in said
    assert ("position_embeddings" in said) is (lesson == "rope")  # rotary tables only for the lesson that rotates


class Counted(nn.Module):
    """A causal attention that adds the mask it is handed, and counts the calls and their mask sizes."""

    sizes: ClassVar[list[int]] = []

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        Counted.sizes.append(int(mask.shape[-1]))
        s = self.W_query(x) @ self.W_key(x).transpose(1, 2) + mask
        return self.drop(torch.softmax(s / math.sqrt(self.W_key.out_features), dim=-1)) @ self.W_value(x)


class Unmasked(Counted):
    """Takes the mask and leaves it out."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        s = self.W_query(x) @ self.W_key(x).transpose(1, 2)
        return self.drop(torch.softmax(s / math.sqrt(self.W_key.out_features), dim=-1)) @ self.W_value(x)


def test_every_call_gets_a_mask_of_its_own_tokens() -> None:
    Counted.sizes = []
    r = tracer.check(Counted, lesson="causal")
    assert r.ok, r.explain("en")
    # the additive mask tried (and kept), eval and train mode on 6 tokens, the shorter run on 4,
    # the second build on 7 in both modes
    assert Counted.sizes == [6, 6, 6, 4, 7, 7]
    assert r.given == {"mask": "mask"} and "given_mask" in r.notes
    assert "(mask)" in r.explain("en") and "（mask）" in r.explain("zh") and "因果掩码" in r.explain("zh")


def test_a_given_mask_left_out_is_still_found() -> None:
    r = tracer.check(Unmasked, lesson="causal")
    assert not r.ok and r.diagnosis is not None and r.diagnosis == "mask_missing"


def test_what_was_given_crosses_the_pipe_and_nothing_else() -> None:
    ev = Evidence("A", given={"mask": "mask", "position_ids": "position_ids"})
    assert decode(copy.deepcopy(encode(ev))).given == ev.given
    forged = encode(ev)
    forged["given"] = {"mask": "os.system"}
    with pytest.raises(Malformed):
        decode(forged)


class Strange(Counted):
    """Counted, but wanting an argument no caller knows."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor, weird: int) -> torch.Tensor:  # type: ignore[override]
        return super().forward(x, mask)


def make(d_in: int, d_out: int, context_length: int, dropout: float) -> nn.Module:
    """A factory whose module at other sizes has another forward."""
    return (Counted if context_length == 6 else Strange)(d_in, d_out, context_length, dropout)


def test_another_forward_at_other_sizes_is_a_verdict_not_trouble() -> None:
    r = tracer.check(make, lesson="causal")
    assert r.structure == "sizes_ignored"
    assert "requires weird" in r.explain("en") and "无法构建" in r.explain("zh")
