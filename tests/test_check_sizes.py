"""The multi-head check at other widths than the lesson's ``d_out = 8``: the verdicts hold at every width.

The lesson traces two heads, so ``num_heads`` is 2 (``docs/check.md``).  At
``d_out = 2`` each head is one number wide and ``√d_k = 1``: the correct
forms still pass, and the mistakes that do not involve the scaling are still
found; a scaling mistake changes nothing there, so it is checked at 4 and 8.
Every corpus file is reused with the verdict its ``# expect:`` line gives.
Lesson ``rope``'s second build (two components wider) is modelled in both
pairings: a module that writes the lesson's width into its frequencies is
caught in either.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tracer
from tracer.compare.check.student import load
from tracer.errors import InputError

CORPUS = Path(__file__).parent / "check_corpus"


def expect(name: str) -> dict[str, str]:
    head = (CORPUS / name).read_text(encoding="utf-8").splitlines()[0]
    return dict(kv.split("=", 1) for kv in head.split(":", 1)[1].split())


MULTIHEAD = sorted(p.name for p in CORPUS.glob("multihead_*.py") if "two_bugs" not in p.name)
SCALING = {"scale_wrong", "scale_missing", "scale_inverted"}


@pytest.mark.parametrize("d_out", [2, 4, 8, 12])
@pytest.mark.parametrize("name", MULTIHEAD)
def test_multihead_verdicts_at_other_widths(name: str, d_out: int) -> None:
    want = expect(name)
    if d_out == 2 and want.get("diagnosis") in SCALING:
        pytest.skip("one number per head: √d_k = 1, so no scaling mistake shows")
    if want.get("heads") == "even" and (d_out // 2) % 2:
        pytest.skip("the code pairs each head's components: it takes even head widths only")
    obj, source = load(f"{CORPUS / name}:{want['name']}")
    r = tracer.check(obj, lesson="multihead", source=source, d_out=d_out)
    assert r.ok is (want["exit"] == "0"), r.explain("en")
    if not r.ok and want["stage"] == "structure":
        assert r.first_divergence is None and r.structure == want["diagnosis"]
    elif not r.ok:
        assert r.first_divergence is not None and r.first_divergence.stage == want["stage"]
        assert r.diagnosis == want["diagnosis"]


@pytest.mark.parametrize("d_out", [1, 3, 4])
@pytest.mark.parametrize("name", ["causal_book.py", "causal_mask_zero.py", "causal_diagonal_two.py"])
def test_causal_at_other_widths(name: str, d_out: int) -> None:
    want = expect(name)
    obj, source = load(f"{CORPUS / name}:{want['name']}")
    r = tracer.check(obj, lesson="causal", source=source, d_out=d_out)
    assert r.ok is (want["exit"] == "0") and r.diagnosis == want.get("diagnosis")


def test_widths_the_lesson_cannot_take() -> None:
    obj, _ = load(f"{CORPUS / 'multihead_book.py'}:MultiHeadAttention")
    with pytest.raises(InputError, match="multiple of the lesson's 2 heads"):
        tracer.check(obj, lesson="multihead", d_out=5)
    with pytest.raises(InputError, match="lesson simple has no d_in or d_out"):
        tracer.check(lambda x: x, lesson="simple", d_out=4)


def test_cli_d_out_and_timeout(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tracer.cli import app

    def run(*args: str) -> tuple[int, str]:
        res = CliRunner().invoke(app, ["check", *args])
        return res.exit_code, res.stdout + res.stderr

    book = f"{CORPUS / 'multihead_book.py'}:MultiHeadAttention"
    assert run(book, "--lesson", "multihead", "--d-out", "4")[0] == 0
    code, said = run(book, "--lesson", "multihead", "--d-out", "5")
    assert code == 2 and "multiple of the lesson's 2 heads" in said and said.count("\n") == 1
    slow = tmp_path / "slow.py"
    slow.write_text("def f(inputs):\n    while True:\n        pass\n", encoding="utf-8")
    code, said = run(f"{slow}:f", "--lesson", "simple", "--timeout", "0.5")
    assert code == 2 and "did not finish within 0.5 s" in said and said.count("\n") == 1


def _fixed_width(tmp_path: Path, style: str, width: str) -> object:
    """Lesson rope's module in ``style`` with its frequencies' exponent over ``width`` (``d_out`` is right)."""
    source = (
        (CORPUS / "rope_fixed_width.py").read_text(encoding="utf-8").replace(".float() / 4))", f".float() / {width}))")
    )
    if style == "interleaved":  # neighbours turned, each angle twice in a row
        tables = "emb = torch.cat((angles, angles), dim=-1)"
        source = source.replace(tables, "emb = angles.repeat_interleave(2, dim=-1)")
        source = source.replace(
            "return torch.cat((-x2, x1), dim=-1)",
            "return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)",
        )
    path = tmp_path / f"rope_{style}_{width}.py"
    path.write_text(source, encoding="utf-8")
    obj, _ = load(f"{path}:RoPEAttention")
    return obj


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_rope_at_other_sizes_is_modelled_in_both_pairings(tmp_path: Path, style: str) -> None:
    """Right at every width, it matches; written for d_out = 4, it is caught at the second size, in either pairing."""
    right = tracer.check(_fixed_width(tmp_path, style, "d_out"), lesson="rope", rope_style=style)
    assert right.ok, right.explain()
    fixed = tracer.check(_fixed_width(tmp_path, style, "4"), lesson="rope", rope_style=style)
    assert not fixed.ok and fixed.hit is not None and fixed.hit.code == "sizes_ignored"
    assert "d_out=6" in str(fixed.hit.detail["sizes"])
    other = "interleaved" if style == "half" else "half"  # the other pairing is a verdict at the lesson's size
    wrong = tracer.check(_fixed_width(tmp_path, style, "d_out"), lesson="rope", rope_style=other)
    assert not wrong.ok and wrong.hit is not None and wrong.hit.code == "rope_style_other"
