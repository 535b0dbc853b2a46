"""``check --lesson kvcache``: the generation driven call by call, each catalogue entry, both cache conventions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.test_check_corpus import FILES, expectation
from tracer.compare.check import cachemistakes, check, generation
from tracer.compare.check.catalogue import BY_CODE, KVCACHE
from tracer.compare.check.lessons import SPECS
from tracer.compare.check.student import load
from tracer.errors import InputError
from tracer.present.messages import render

CORPUS = Path(__file__).parent / "check_corpus"


def _load(name: str) -> object:
    obj, _ = load(f"{CORPUS / name}")
    return obj


def test_every_kvcache_mistake_has_a_corpus_case_and_a_documented_row() -> None:
    codes = {e.code for e in KVCACHE}
    assert codes == set(cachemistakes.MISTAKES) and len(codes) == 7
    assert codes <= {expectation(p).get("diagnosis") for p in FILES if expectation(p)["lesson"] == "kvcache"}
    doc = (Path(__file__).parent.parent / "docs" / "check.md").read_text(encoding="utf-8")
    for entry in KVCACHE:
        assert f"| `{entry.code}` |" in doc and BY_CODE[entry.code] is entry
        for lang in ("en", "zh"):
            said = entry.said({k: "1" for k in ("pos", "seen", "cached", "prompt", "n", "error", "count")})
            assert "1" in render(said, lang)


def test_the_calls_bring_every_token_once_and_one_call_brings_two_after_a_prompt() -> None:
    calls = SPECS["kvcache"].calls
    assert [a for a, _ in calls] == [1] + [b + 1 for _, b in calls[:-1]] and calls[-1][1] == 6
    assert any(b == a for a, b in calls[1:]) and any(b > a for a, b in calls[1:])  # one token, and several


def test_the_reference_is_the_lesson_on_the_same_calls_and_equals_full_causal_rows() -> None:
    obj = _load("kvcache_tuple.py:CachedAttention")
    r = check(obj, "kvcache")
    assert r.ok and [s.quantity.step for s in r.stages] == ["step1.z", "step2.z", "step3.z", "step4.z"]
    assert r.trace.meta["steps"] == [list(c) for c in SPECS["kvcache"].calls]
    assert np.array_equal(r.trace.tensor("gen.z"), r.trace.tensor("full.z"))  # the lesson's equality, there too


def test_a_module_without_reset_keeps_its_state_between_generations_only_if_asked() -> None:
    """The cache kept on the module is emptied by reset_cache before the check's generation."""
    cls = _load("kvcache_book.py:MultiHeadAttentionCached")
    torch.manual_seed(0)
    m = cls(3, 2, 6)
    m(torch.rand(2, 3, 3), use_cache=True)  # a generation left half done
    assert m.ptr_current_pos == 3
    assert check(cls, "kvcache").ok  # the check builds and resets its own module


def test_the_convention_is_read_from_forward() -> None:
    assert generation.convention(_load("kvcache_tuple.py:CachedAttention")(3, 2, 6)) == ("passed", "cache")
    assert generation.convention(_load("kvcache_book.py:MultiHeadAttentionCached")(3, 2, 6)) == (
        "use_cache",
        "use_cache",
    )


class _Crashes(torch.nn.Module):
    """Correct on the prompt, then a crash no mistake explains."""

    def __init__(self, d_in: int, d_out: int, context_length: int) -> None:
        super().__init__()
        self.W_query = torch.nn.Linear(d_in, d_out, bias=False)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=False)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=False)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > 1:
            raise ValueError("no cache here")
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        n = x.shape[1]
        s = (q @ k.transpose(1, 2)).masked_fill(torch.triu(torch.ones(n, n), 1).bool(), -torch.inf)
        return torch.softmax(s / k.shape[-1] ** 0.5, dim=-1) @ v


def test_a_crash_no_mistake_explains_is_trouble_not_a_verdict() -> None:
    with pytest.raises(InputError, match="the call on 1 new tokens raised ValueError: no cache here"):
        check(_Crashes, "kvcache")


@pytest.mark.parametrize("path", [p for p in FILES if p.stem.startswith("kvcache_")], ids=lambda p: p.stem)
def test_each_corpus_case_names_the_call_and_the_tokens(path: Path) -> None:
    want = expectation(path)
    r = check(_load(f"{path.name}:{want['name']}"), "kvcache")
    assert r.ok is (want["exit"] == "0")
    if want.get("stage") == "structure":  # right at the lesson's sizes, wrong at others: no call to name
        assert r.first_divergence is None and r.structure == want["diagnosis"] and r.sentence("zh")
    elif not r.ok:
        d = r.first_divergence
        assert d is not None and d.stage == "generation" and d.run.startswith("call:")
        assert r.diagnosis == want["diagnosis"] and "generation call" in r.explain("en")
        assert r.sentence("zh") and "{" not in r.sentence("en")


def test_a_forward_that_takes_the_position_is_given_it_in_the_form_it_names() -> None:
    """Meta's ``start_pos`` (an int), gpt-fast's ``input_pos`` (new positions), HF's ``position_ids`` (per sample)."""

    class Takes(torch.nn.Module):
        def forward(self, x: torch.Tensor, start_pos: int) -> torch.Tensor:
            return x

    assert generation.position(Takes()) == "start_pos"
    assert generation._where("start_pos", 3, 3, 2) == {"start_pos": 2}  # token 3 after two cached
    assert torch.equal(generation._where("input_pos", 5, 6, 2)["input_pos"], torch.tensor([4, 5]))
    ids = generation._where("position_ids", 5, 6, 2)["position_ids"]
    assert ids.shape == (2, 2) and torch.equal(ids[1], torch.tensor([4, 5]))
    assert generation._where("", 1, 2, 2) == {}
    assert generation.position(_load("kvcache_tuple.py:CachedAttention")(3, 2, 6)) == ""  # no position: none given


@pytest.mark.parametrize("spec", ["kvcache_start_pos.py:Attention", "kvcache_input_pos.py:CausalSelfAttention"])
def test_a_preallocated_cache_told_its_position_matches(spec: str) -> None:
    assert check(_load(spec), "kvcache").ok
