"""``--heads N`` (``tracer.check(..., heads=N)``): lessons multihead and gqa checked with another number of heads.

Every multi-head corpus file keeps the verdict its ``# expect:`` line gives
with 1, 4 and 8 heads (``d_out = 8``: heads 8, 2 and 1 wide; a scaling
mistake is only looked for where √d_k is not 1); the number shows in the
text, the JSON and the HTML page; a number the lesson cannot take is one
line with exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.compare.check.student import load
from tracer.errors import InputError

CORPUS = Path(__file__).parent / "check_corpus"
SCALING = {"scale_wrong", "scale_missing", "scale_inverted"}


def expect(name: str) -> dict[str, str]:
    head = (CORPUS / name).read_text(encoding="utf-8").splitlines()[0]
    return dict(kv.split("=", 1) for kv in head.split(":", 1)[1].split())


TWO_HEAD_BUGS = {
    "multihead_no_transpose.py": "joining (b, 1, T, d) without the transpose is the same view",
    "multihead_proj_per_head.py": "one head's projection is the projection over all heads",
    "multihead_wrapper_cat_dim.py": "one tensor concatenated along any axis is itself",
    "multihead_wrapper_mask_one.py": "only the second head lacks the mask",
    "multihead_wrapper_shared.py": "there is no second head to share weights with",
    "multihead_wrapper_copied.py": "there is no second head to copy",
    "multihead_scale_dout.py": "√d_out is √d_k",
    "multihead_grouped_query.py": "one key head for one query head is not grouped",
}
"""The mistakes that need two heads to show, and why each is right with one."""

MULTIHEAD = sorted(p.name for p in CORPUS.glob("multihead_*.py") if "two_bugs" not in p.name)


@pytest.mark.parametrize("heads", [1, 4, 8])
@pytest.mark.parametrize("name", MULTIHEAD)
def test_multihead_verdicts_with_other_heads(name: str, heads: int) -> None:
    want = expect(name)
    if heads == 8 and want.get("diagnosis") in SCALING:
        pytest.skip("one number per head: √d_k = 1, so no scaling mistake shows")
    if want.get("heads") == "even" and (8 // heads) % 2:
        pytest.skip("the code pairs each head's components: it takes even head widths only")
    if heads == 1 and name in TWO_HEAD_BUGS:
        pytest.skip(f"correct with one head: {TWO_HEAD_BUGS[name]}")
    obj, source = load(f"{CORPUS / name}:{want['name']}")
    r = tracer.check(obj, lesson="multihead", source=source, heads=heads)
    assert r.heads == heads
    assert r.ok is (want["exit"] == "0"), r.explain("en")
    if not r.ok and "diagnosis" in want and heads > 1:
        assert r.diagnosis == want["diagnosis"], r.explain("en")


def cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["check", *args])
    return res.exit_code, res.stdout, res.stderr


def test_the_heads_show_in_every_output(tmp_path: Path) -> None:
    book = f"{CORPUS / 'multihead_book.py'}:MultiHeadAttention"
    code, out, _ = cli(book, "--lesson", "multihead", "--heads", "4")
    assert code == 0 and "num_heads=4)" in out and "Heads: 4 (num_heads" in out
    code, out, _ = cli(book, "--lesson", "multihead", "--heads", "4", "--lang", "zh")
    assert code == 0 and "头数：4" in out
    code, out, _ = cli(book, "--lesson", "multihead", "--heads", "4", "--format", "json")
    assert code == 0 and json.loads(out)["heads"] == 4
    code, _, _ = cli(book, "--lesson", "multihead", "--heads", "4", "--format", "html", "-o", str(tmp_path / "c.html"))
    assert code == 0 and "Heads: 4" in (tmp_path / "c.html").read_text(encoding="utf-8")
    code, out, _ = cli(book, "--lesson", "multihead", "--format", "json")
    assert code == 0 and json.loads(out)["heads"] == 2  # the lesson's own
    code, out, _ = cli(f"{CORPUS / 'causal_book.py'}:CausalAttention", "--lesson", "causal", "--format", "json")
    assert json.loads(out)["heads"] is None


def test_a_scaling_mistake_shows_with_four_heads() -> None:
    obj, source = load(f"{CORPUS / 'multihead_scale_dout.py'}:MultiHeadAttention")
    r = tracer.check(obj, lesson="multihead", source=source, heads=4)
    assert not r.ok and r.diagnosis == "scale_wrong" and "√d_out" in r.sentence("en")


def test_grouped_query_with_other_heads() -> None:
    obj, source = load(f"{CORPUS / 'gqa_book.py'}:{expect('gqa_book.py')['name']}")
    for heads in (2, 4, 8):
        r = tracer.check(obj, lesson="gqa", source=source, heads=heads, d_out=16)
        assert r.ok and r.heads == heads, r.explain("en")
        assert f"num_heads={heads}, num_kv_groups=2)" in r.built  # called by the names it gives its sizes


@pytest.mark.parametrize(
    ("lesson", "heads", "said"),
    [
        ("causal", "2", "lesson causal has one head: heads are for multihead, gqa"),
        ("multihead", "3", "d_out must be a positive multiple of 3 heads, got 8"),
        ("gqa", "3", "heads must be a multiple of lesson gqa's 2 key/value groups, got 3"),
    ],
)
def test_a_number_the_lesson_cannot_take_is_one_line(lesson: str, heads: str, said: str) -> None:
    code, out, err = cli(f"{CORPUS / 'multihead_book.py'}:MultiHeadAttention", "--lesson", lesson, "--heads", heads)
    assert code == 2 and out == "" and said in err and len(err.strip().splitlines()) == 1
    with pytest.raises(InputError, match=said):
        tracer.check(lambda x: x, lesson=lesson, heads=int(heads))


def test_a_grouped_fused_projection_is_cut_by_its_widths_only_when_named_as_fused() -> None:
    """``qkv`` 8 + 2·4 = 16 wide is queries 8, keys 4, values 4; the same matrix under a name of its own is refused."""
    import torch.nn as nn

    from tracer.compare.check import roles

    class Fused(nn.Module):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.add_module(name, nn.Linear(3, 16, bias=False))

    module = Fused("qkv")
    found = roles.assign(module, 3, 8, out_proj=False, grouped=True)
    w = module.qkv.weight.detach().double().numpy().T  # (3, 16): x @ w
    assert [found[r].param for r in roles.QKV] == ["qkv.weight[0:8]", "qkv.weight[8:12]", "qkv.weight[12:16]"]
    for r, cut in zip(roles.QKV, (slice(0, 8), slice(8, 12), slice(12, 16)), strict=True):
        assert (found[r].value == w[:, cut]).all()
    with pytest.raises(InputError, match="cannot find query, key and value"):
        roles.assign(Fused("mixer"), 3, 8, out_proj=False, grouped=True)
    with pytest.raises(InputError):  # outside lesson gqa the 16-wide matrix is no fused projection of width 8
        roles.assign(Fused("qkv"), 3, 8, out_proj=False)


def test_a_merged_batch_heads_layout_is_aligned_stage_by_stage() -> None:
    """d2l's transpose_qkv keeps (b·heads, T, d) throughout: scores, masked scaled scores and weights are compared.

    Its mask is a finite fill (-1e6) where the lesson has -inf: the same hidden
    key, so the masked scores match instead of being skipped; its two
    single-mistake copies are named at their own stage.
    """
    corpus = Path(__file__).parent / "check_corpus"
    right, _ = load(f"{corpus / 'multihead_d2l_transpose_qkv.py'}:MultiHeadAttention")
    r = tracer.check(right, "multihead")
    status = {s.quantity.key: s.status for s in r.stages}
    assert r.ok and "not compared" not in status.values()
    assert status["omega"] == status["masked_scaled"] == status["alpha"] == "match"
    for name, stage, code in (("mask_zero", "mask", "mask_zero"), ("scale_d", "scaling", "scale_wrong")):
        wrong, _ = load(f"{corpus / f'multihead_d2l_{name}.py'}:MultiHeadAttention")
        w = tracer.check(wrong, "multihead")
        assert w.first_divergence is not None and w.first_divergence.stage == stage and w.diagnosis == code
