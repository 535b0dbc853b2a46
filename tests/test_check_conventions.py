"""How the check builds and calls a class: configurations, further arguments in their callers' forms, inputs.

Small classes written here, each with one calling convention of published
code, and what the check makes of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tracer
from tracer.compare.check import build, config, forwardargs, resize, resizegather, spanargs, student
from tracer.compare.check.run import spec_for
from tracer.errors import InputError

SIZES = {"d_in": 8, "d_out": 8, "context_length": 6, "num_heads": 4, "num_kv_groups": 2, "dropout": 0.25}
ORDER = tuple(SIZES)


@dataclass
class Args:
    dim: int = 4096
    n_heads: int = 32
    n_kv_heads: int | None = None
    vocab_size: int = 32000
    max_seq_len: int = 2048


class Settings:
    def __init__(self, hidden_size: int = 768, num_attention_heads: int = 12, layer_norm_eps: float = 1e-5) -> None:
        self.hidden_size, self.num_attention_heads, self.layer_norm_eps = (
            hidden_size,
            num_attention_heads,
            layer_norm_eps,
        )


class Needs:
    def __init__(self, hidden_size: int, num_attention_heads: int, vocab_size: int) -> None:
        self.hidden_size = hidden_size


def test_a_dataclass_config_is_filled_by_its_fields_names_and_keeps_its_other_defaults() -> None:
    made, shown = config.make(Args, SIZES, 2, "Attention")
    assert (made.dim, made.n_heads, made.n_kv_heads, made.max_seq_len, made.vocab_size) == (8, 4, 2, 6, 32000)
    assert shown == "Args(dim=8, n_heads=4, n_kv_heads=2, max_seq_len=6)"


def test_a_plain_class_config_is_called_with_the_keywords_it_takes() -> None:
    made, shown = config.make(Settings, SIZES, 2, "Attention")
    assert (made.hidden_size, made.num_attention_heads, made.layer_norm_eps) == (8, 4, 1e-5)
    assert shown.startswith("Settings(hidden_size=8, num_attention_heads=4")


def test_a_required_field_the_lesson_does_not_fix_is_one_line_with_the_factory_route() -> None:
    with pytest.raises(config.Unfilled) as e:
        config.make(Needs, SIZES, 2, "Attention")
    said = str(e.value)
    assert "Needs.vocab_size" in said and "factory" in said and "\n" not in said


class Annotated(nn.Module):
    """Meta's style: the configuration's class in the annotation, a layer index after it."""

    def __init__(self, args: Args, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.heads, self.groups = args.n_heads, args.n_kv_heads or args.n_heads
        self.d = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, self.groups * self.d, bias=False)
        self.wv = nn.Linear(args.dim, self.groups * self.d, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.d).transpose(1, 2)
        k, v = (w(x).view(b, t, self.groups, self.d).transpose(1, 2) for w in (self.wk, self.wv))
        k, v = (a.repeat_interleave(self.heads // self.groups, dim=1) for a in (k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


def test_a_class_built_from_its_annotated_config_is_checked_and_says_how() -> None:
    got = tracer.check(Annotated, lesson="gqa")
    assert got.ok, got.explain("en")
    assert got.built == "Annotated(args=Args(dim=8, n_heads=4, n_kv_heads=2, max_seq_len=6), layer_idx=0)"


class Namespace(nn.Module):
    """minGPT's style: an unannotated config, no configuration class beside it; keyword-only after it."""

    def __init__(self, config, *, scale: float = 1.0) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.h, self.c = config.n_head, config.n_embd
        self.c_attn = nn.Linear(self.c, 3 * self.c, bias=config.bias)
        self.c_proj = nn.Linear(self.c, self.c, bias=config.bias)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (a.view(b, t, self.h, c // self.h).transpose(1, 2) for a in self.c_attn(x).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True) * self.scale
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


class Reads(Namespace):
    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config)
        self.flavour = config.rotary_flavour


def test_an_unannotated_config_is_a_namespace_and_a_field_it_lacks_is_named() -> None:
    got = tracer.check(Namespace, lesson="multihead")
    assert got.ok, got.explain("en")
    assert got.built.startswith("Namespace(config=config(") and "n_embd" not in got.built  # one name per size
    with pytest.raises(InputError) as e:
        tracer.check(Reads, lesson="multihead")
    assert "config.rotary_flavour" in str(e.value) and "factory" in str(e.value)


def test_a_config_is_built_square_and_the_sizes_are_checked_again() -> None:
    with pytest.raises(build.Square):
        build.build(Annotated, {**SIZES, "d_in": 3}, ORDER, 1)
    module, how = build.build(Annotated, SIZES, ORDER, 1)
    assert isinstance(module, Annotated) and module.layer_idx == 0 and "layer_idx=0" in how


class Rotated(nn.Module):
    """A layer whose model hands it the rotary tables (nanochat's half-width pair), checked against lessons that
    turn nothing.  It rotates the two halves of each head: at an odd head width it runs and computes something
    else (its halves are of unequal widths), so it can only be checked at an even one."""

    def __init__(self, d_in: int, d_out: int, context_length: int, num_heads: int, num_kv_groups: int) -> None:
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_groups, d_out // num_heads
        self.q = nn.Linear(d_in, d_out, bias=False)
        self.k = nn.Linear(d_in, self.g * self.d, bias=False)
        self.v = nn.Linear(d_in, self.g * self.d, bias=False)
        self.o = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x: torch.Tensor, cos_sin: Any, attention_mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        cos, sin = cos_sin

        def turn(a: torch.Tensor) -> torch.Tensor:  # (b, t, heads, d) with tables (1, t, 1, d/2)
            half = a.shape[-1] // 2
            one, two = a[..., :half], a[..., half:]
            return torch.cat((one * cos + two * sin, one * -sin + two * cos), dim=-1)

        q = turn(self.q(x).view(b, t, self.h, self.d)).transpose(1, 2)
        k = turn(self.k(x).view(b, t, self.g, self.d)).transpose(1, 2)
        v = self.v(x).view(b, t, self.g, self.d).transpose(1, 2)
        k, v = (a.repeat_interleave(self.h // self.g, dim=1) for a in (k, v))
        w = (q @ k.transpose(2, 3)) / math.sqrt(self.d) + attention_mask[:, :, :, : k.shape[-2]]
        return self.o((w.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1))


def test_rotary_tables_are_given_at_angle_0_in_the_form_the_layer_reads() -> None:
    got = tracer.check(Rotated, lesson="gqa")
    assert got.ok, got.explain("en")
    assert got.given == {"cos_sin": "still_cos_sin_half", "attention_mask": "mask"}  # the half-width pair
    assert "given_still" in got.notes
    x = torch.zeros(2, 5, 8)
    cos, sin = forwardargs.value("still_cos_sin", x, spec_for("gqa"), 2)
    assert cos.shape == (2, 5, 2) and bool((cos == 1).all()) and bool((sin == 0).all())


def test_a_second_build_of_code_that_turns_pairs_has_even_heads() -> None:
    spec = spec_for("gqa")
    first = resize.alternatives(spec)[0]
    odd_first = resizegather._odd(spec, first[0])  # the lesson's first sizes: odd heads
    assert odd_first and not resizegather._odd(spec, first[1])
    names = spec.signature
    builder = lambda got: build.build(Rotated, {n: got[n] for n in names}, names, spec.seed)[0]  # noqa: E731
    tables = forwardargs.Mask(tables=(("cos_sin", "still_cos_sin_half"),))
    odd = resize.judge(spec, resizegather.gather(builder, spec, tables, pairs=False))
    assert odd is not None  # taken at odd heads, it fails there: what used to be a false sizes_ignored
    assert resize.judge(spec, resizegather.gather(builder, spec, tables, pairs=True)) is None
    got = tracer.check(Rotated, lesson="gqa")
    assert got.hit is None  # built at the even fallback, where it is right: no sizes_ignored


def test_the_mask_is_tried_with_the_batch_as_its_first_axis() -> None:
    x = torch.zeros(2, 5, 3)
    mask = forwardargs.value("mask", x, spec_for("multihead"), 0, rank=4, batched=True)
    assert mask.shape == (2, 1, 5, 5)

    class PerSample(nn.Module):  # reads the mask's first axis as the batch's: mask[i] for sample i
        def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int) -> None:
            super().__init__()
            self.inner = Annotated(Args(dim=d_out, n_heads=num_heads), 0)

        def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            assert attention_mask.shape[0] == x.shape[0]
            return self.inner(x)

    got = tracer.check(PerSample, lesson="multihead")
    assert got.ok, got.explain("en")


def test_the_other_forms_of_the_tables_hold_the_same_angles() -> None:
    x = torch.zeros(2, 5, 8)
    spec = spec_for("rope")
    cos, _ = forwardargs.value("cos_sin", x, spec, 4)
    hcos, hsin = forwardargs.value("cos_sin_half", x, spec, 4)
    assert hcos.shape == (1, 5, 1, 2) and torch.allclose(hcos[0, :, 0], cos[0, :, :2])
    pairs = forwardargs.value("freqs_pairs", x, spec, 4)
    complex_ = forwardargs.value("freqs_cis", x, spec, 4)
    assert pairs.shape == (5, 2, 2) and torch.allclose(torch.view_as_complex(pairs.contiguous()), complex_)
    assert torch.allclose(forwardargs.value("freqs_sin", x, spec, 4), hsin[0, :, 0])


def test_d2l_valid_lengths_are_one_more_than_each_row() -> None:
    lens = forwardargs.value("valid_lens", torch.zeros(2, 4, 3), spec_for("multihead"), 0)
    assert lens.tolist() == [[1, 2, 3, 4]] * 2


def test_a_window_band_is_a_mask_form_for_the_lesson_with_a_window() -> None:
    band = forwardargs.value("mask_keep_band", torch.zeros(6, 3), spec_for("window"), 0)
    assert band.int().tolist()[5] == [0, 0, 0, 1, 1, 1]  # token 6 sees itself and the two before it


class Conv(nn.Module):
    """GPT-2's Conv1D: ``x.view(-1, width)`` needs a contiguous input."""

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.view(-1, x.shape[-1]) @ self.weight).view(*x.shape[:-1], -1)


def test_inputs_are_contiguous_and_in_the_parameters_dtype() -> None:
    x = torch.rand(2, 6, 3)[..., :4, :].transpose(0, 1).transpose(0, 1)
    assert not x[:, :4].is_contiguous()
    half = Conv(3, 2).to(torch.float64)
    fitted = student.fitted(half, x[:, :4])
    assert fitted.is_contiguous() and fitted.dtype == torch.float64
    run = student.call(half, x[:, :4], 1)
    assert run.error is None and run.output.shape == (2, 4, 2)


class MetaCache(nn.Module):
    """Meta's generation convention on one head without a projection: start_pos, freqs_cis and a mask
    (T_new, start_pos + T_new) from the caller, a preallocated cache written at start_pos."""

    def __init__(self, d_in: int, d_out: int, context_length: int) -> None:
        super().__init__()
        self.wq, self.wk, self.wv = (nn.Linear(d_in, d_out, bias=False) for _ in range(3))
        self.register_buffer("ck", torch.zeros(2, context_length, d_out), persistent=False)
        self.register_buffer("cv", torch.zeros(2, context_length, d_out), persistent=False)

    def forward(self, x: torch.Tensor, start_pos: int, freqs_cis: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k = (torch.view_as_complex(w(x).reshape(b, t, -1, 2)) * freqs_cis for w in (self.wq, self.wk))
        q, k = torch.view_as_real(q).flatten(2), torch.view_as_real(k).flatten(2)
        self.ck[:b, start_pos : start_pos + t] = k
        self.cv[:b, start_pos : start_pos + t] = self.wv(x)
        keys, values = self.ck[:b, : start_pos + t], self.cv[:b, : start_pos + t]
        w = q @ keys.transpose(1, 2) / math.sqrt(q.shape[-1]) + mask
        return w.softmax(-1) @ values


def test_a_generation_passes_each_call_its_rows_of_the_tables_and_the_mask() -> None:
    module = MetaCache(3, 2, 6)
    span = spanargs.spans(module, spec_for("kvcache"))
    assert span is not None
    got = span(torch.zeros(2, 2, 3), 5, 6)
    assert got["mask"].shape == (2, 6) and got["freqs_cis"].shape == (2, 1) and got["start_pos"] == 0
    assert torch.isinf(got["mask"][0, 5]) and not torch.isinf(got["mask"][1]).any()
    result = tracer.check(MetaCache, lesson="kvcache")
    assert result.ok, result.explain("en")


def test_a_size_goes_by_the_same_names_as_a_parameter_and_as_a_field() -> None:
    """One list (``config.SIZES``): a constructor's parameter is read by the names a configuration's field is."""
    values = {"d_in": 8, "d_out": 8, "context_length": 6, "dropout": 0.25, "num_heads": 4}
    order = tuple(values)
    for role, names in config.SIZES.items():
        if role == "width":
            assert set(names) == set(build.WIDTH)
            continue
        assert set(names) <= set(build.ALIASES[role]), role
        assert all(config.ROLE[n] == role for n in names), role

    def hf_style(hidden_size, num_attention_heads, max_position_embeddings, attention_dropout=0.0):  # type: ignore[no-untyped-def]
        return None

    args, kwargs = build.plan(hf_style, values, order)
    assert args == () and kwargs == {
        "hidden_size": 8, "num_attention_heads": 4, "max_position_embeddings": 6, "attention_dropout": 0.25,
    }  # fmt: skip


def test_a_residual_dropout_parameter_keeps_its_own_default() -> None:
    """``resid_pdrop`` is the output's dropout, not the attention weights': only a configuration sets it."""
    values = {"d_in": 8, "d_out": 8, "context_length": 6, "dropout": 0.25, "num_heads": 4}

    def mingpt_style(n_embd, n_head, block_size, attn_pdrop, resid_pdrop=0.0):  # type: ignore[no-untyped-def]
        return None

    _, kwargs = build.plan(mingpt_style, values, tuple(values))
    assert kwargs["attn_pdrop"] == 0.25 and "resid_pdrop" not in kwargs
    made, _ = config.make(None, values, 2, "Attention")
    assert made.resid_pdrop == 0.25 and made.attn_pdrop == 0.25
