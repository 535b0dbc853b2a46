"""The second builds of lessons window, gqa, flash and kvcache: other sizes, and maths of their own.

The corpus fixes the verdicts (``*_fixed_*.py``: a size typed in is
``sizes_ignored``, every correct file still passes); these tests fix how the
check gets there: which sizes each lesson is rebuilt at, that the float64
reference is the lesson's attention written out another way, and that each
second build catches what the lesson's own sizes let through.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import tracer
from tracer.compare.check import lessons, resize
from tracer.compare.check.model import Role
from tracer.compare.check.student import load
from tracer.message import Message
from tracer.present.messages import render

CORPUS = Path(__file__).parent / "check_corpus"
NONE = Message("how.none")


def _from(tmp_path: Path, name: str, changes: dict[str, str], obj: str, saved: str = "") -> object:
    """Corpus file ``name`` with each ``old`` of ``changes`` (which must occur) replaced, loaded as ``obj``."""
    source = (CORPUS / name).read_text(encoding="utf-8")
    for old, new in changes.items():
        assert old in source
        source = source.replace(old, new)
    path = tmp_path / (saved or name)
    path.write_text(source, encoding="utf-8")
    got, _ = load(f"{path}:{obj}")
    return got


def _weights(d_in: int, widths: dict[str, int], seed: int = 3) -> dict[str, Role]:
    g = np.random.default_rng(seed)
    return {r: Role(r, r, NONE, g.standard_normal((d_in, w))) for r, w in widths.items()}


@pytest.mark.parametrize("name", ["window", "gqa", "kvcache"])
def test_every_second_build_differs_from_the_lesson_in_each_size_the_constructor_takes(name: str) -> None:
    spec = lessons.SPECS[name]
    lesson = dict(zip(spec.signature, spec.args, strict=True))
    for got in resize.builds(spec):
        assert all(got[n] != lesson[n] for n in spec.signature), got
        assert got["tokens"] <= got["context_length"] and got["tokens"] != 6
    if name == "gqa":  # heads one component wider, and one build multi-query
        assert {g["d_out"] // g["num_heads"] for g in resize.builds(spec)} == {spec.head_dim + 1}
        assert [g["num_kv_groups"] for g in resize.builds(spec)][-1] == 1
    if name == "window":  # a narrower and a wider window
        windows = [g["window_size"] for g in resize.builds(spec)]
        assert min(windows) < spec.args[3] < max(windows)


def test_flash_is_called_with_another_block_size_width_and_a_length_no_multiple_of_it() -> None:
    got = resize.builds(lessons.SPECS["flash"])[0]
    assert got["block_size"] not in (2, lessons.SPECS["flash"].block) and got["tokens"] % got["block_size"]
    assert got["tokens"] > 6 and got["d"] != 2


def test_the_window_reference_is_the_band_written_as_a_loop() -> None:
    x = np.random.default_rng(1).random((2, 7, 4))
    found = _weights(4, {"W_query": 3, "W_key": 3, "W_value": 3})
    q, k, v = (x @ found[r].value for r in ("W_query", "W_key", "W_value"))
    for w in (1, 2, 4, 7):
        want = np.zeros((2, 7, 3))
        for b in range(2):
            for i in range(7):
                seen = [j for j in range(7) if i - w < j <= i]
                s = np.array([q[b, i] @ k[b, j] for j in seen]) / np.sqrt(3)
                e = np.exp(s - s.max())
                want[b, i] = (e / e.sum()) @ v[b, seen]
        spec = lessons.SPECS["window"]
        assert spec.at_size is not None
        got = spec.at_size(spec, {"window_size": w}, found, x)
        assert np.allclose(got, want, rtol=0, atol=1e-12), w


@pytest.mark.parametrize(("heads", "groups"), [(6, 3), (3, 1), (4, 4)])
def test_the_grouped_reference_is_torchs_attention_on_groups_repeated_per_head(heads: int, groups: int) -> None:
    dh, d_in = 3, 4
    x = np.random.default_rng(2).random((2, 7, d_in))
    found = _weights(d_in, {"W_query": heads * dh, "W_key": groups * dh, "W_value": groups * dh})
    found["W_out"] = Role("W_out", "out_proj", NONE, np.random.default_rng(4).standard_normal((heads * dh, heads * dh)))
    t = {r: torch.from_numpy(x @ found[r].value) for r in ("W_query", "W_key", "W_value")}
    q = t["W_query"].view(2, 7, heads, dh).transpose(1, 2)
    k, v = (
        t[r].view(2, 7, groups, dh).transpose(1, 2).repeat_interleave(heads // groups, 1) for r in ("W_key", "W_value")
    )
    z = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    want = z.transpose(1, 2).reshape(2, 7, heads * dh).numpy() @ found["W_out"].value
    spec = lessons.SPECS["gqa"]
    assert spec.at_size is not None
    got = spec.at_size(spec, {"num_heads": heads, "num_kv_groups": groups}, found, x)
    assert np.allclose(got, want, rtol=0, atol=1e-10)


def test_a_group_size_typed_in_shows_only_in_the_multi_query_build(tmp_path: Path) -> None:
    """``repeat_interleave(2)`` fits the lesson (4 heads, 2 groups) and the wider build (6, 3): only G = 1 shows it."""
    typed = {"repeat_interleave(self.group_size,": "repeat_interleave(2,"}
    fixed = _from(tmp_path, "gqa_book.py", typed, "GroupedQueryAttention")
    r = tracer.check(fixed, lesson="gqa")
    assert r.structure == "sizes_ignored" and r.hit is not None
    assert "num_heads=3, num_kv_groups=1" in str(r.hit.detail["sizes"]), r.hit.detail
    assert tracer.check(_load("gqa_book.py", "GroupedQueryAttention"), lesson="gqa").ok


def _load(name: str, obj: str) -> object:
    got, _ = load(f"{CORPUS / name}:{obj}")
    return got


def test_a_mask_for_six_tokens_shows_in_the_longer_generation(tmp_path: Path) -> None:
    """The book's cached module with its mask sized 6 x 6: the lesson's 6 tokens fit, the second generation's 8 not."""
    typed = {"torch.ones(context_length, context_length)": "torch.ones(6, 6)"}
    fixed = _from(tmp_path, "kvcache_book.py", typed, "MultiHeadAttentionCached")
    r = tracer.check(fixed, lesson="kvcache")
    assert r.structure == "sizes_ignored" and r.hit is not None
    assert str(r.hit.detail["sizes"]) == "d_in=4, d_out=3, context_length=9, 8 tokens in 5 calls"
    assert str(r.hit.detail["detail"]).startswith("the call on tokens 7-8 raised"), r.hit.detail
    assert render(r.hit.detail["sizes"], "zh").endswith("，8 个词元，分 5 次调用")


def test_a_count_of_blocks_for_six_tokens_shows_on_eight(tmp_path: Path) -> None:
    """``ceil(6 / block_size)`` blocks cover the lesson's 6 and 5 tokens at B = 2 and 4, not 8 tokens at B = 3."""
    wide = {"torch.ones(6, 6,": "torch.ones(64, 64,"}  # a mask for any length the check uses
    right = _from(tmp_path, "flash_fixed_length.py", wide, "flash_attention", "right.py")
    counted = {**wide, "range(0, n, block_size)": "range(0, block_size * -(-6 // block_size), block_size)"}
    fixed = _from(tmp_path, "flash_fixed_length.py", counted, "flash_attention", "counted.py")
    assert tracer.check(right, lesson="flash").ok
    r = tracer.check(fixed, lesson="flash")
    assert r.structure == "sizes_ignored" and r.hit is not None and r.first_divergence is None
    assert str(r.hit.detail["detail"]).startswith("its result differs from the lesson's by up to"), r.hit.detail


@pytest.mark.parametrize("name", ["trainable", "causal", "multihead", "rope", "window", "gqa", "kvcache"])
def test_each_second_build_falls_back_on_even_heads_that_divide_wherever_the_lessons_did(name: str) -> None:
    spec = lessons.SPECS[name]
    for first, *rest in resize.alternatives(spec):
        assert first in resize.builds(spec) and len(rest) == 1
        other = rest[0]
        heads = other.get("num_heads", 1) if spec.multi else 1
        width = other["d_out"] // heads
        assert other["d_out"] % heads == 0 and width % 2 == 0 and width % spec.head_dim == 0
        assert other["d_out"] != first["d_out"]
        assert {k: v for k, v in other.items() if k not in ("d_in", "d_out")} == {
            k: v for k, v in first.items() if k not in ("d_in", "d_out")
        }


def test_a_module_that_takes_only_even_heads_is_judged_at_the_fallback_and_one_that_ignores_sizes_is_not(
    tmp_path: Path,
) -> None:
    even = load(f"{CORPUS / 'multihead_fused_pairs.py'}:PairedHeads")[0]
    got = tracer.check(even, lesson="multihead")
    assert got.ok, got.explain("en")
    fixed = _from(tmp_path, "multihead_fused_pairs.py", {"self.d_out // self.heads)": "4)"}, "PairedHeads")
    wrong = tracer.check(fixed, lesson="multihead")
    assert wrong.diagnosis == "sizes_ignored"
    assert "d_out=10" in wrong.explain("en")  # the first sizes' failure is the one reported


def test_a_second_build_that_names_sizes_the_check_never_offered_is_malformed() -> None:
    from tracer.compare.check.evidence import Malformed, Other

    spec = lessons.SPECS["causal"]
    with pytest.raises(Malformed, match="names sizes 2 of 2"):
        resize.judge(spec, [Other("", {}, {}, tried=2)])
