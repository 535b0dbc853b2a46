"""``check --lesson flash``: the mistakes it names are real and told apart, and bad subjects are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner

from tracer.cli import app
from tracer.compare.check import align, flashcheck, online
from tracer.compare.check.lessons import SPECS

SIZES = [(6, 2), (6, 4), (5, 2)]


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = flashcheck.reference(SPECS["flash"])
    q, k, v = (np.asarray(t.tensor(n), dtype=np.float64) for n in ("q", "k", "v"))
    return q, k, v


def test_the_correct_loop_is_the_lesson_and_the_reference_is_the_tokens_reversed() -> None:
    t = flashcheck.reference(SPECS["flash"])
    assert t.tokens == ["step", "one", "with", "starts", "journey", "Your"] and t.meta["block"] == 2
    q, k, v = _inputs()
    assert np.allclose(online.correct(q, k, v, 2), t.tensor("flash.z"), rtol=1e-6, atol=1e-7)
    assert (np.diff(t.tensor("flash.m"), axis=1) > 0).any()  # the running max rises: the rescale matters here


def test_every_mistake_shows_at_one_size_and_is_told_from_the_others() -> None:
    q, k, v = _inputs()
    got = {
        (code, form): [loop(q[:t], k[:t], v[:t], b) for t, b in SIZES]
        for code, forms in online.MISTAKES.items()
        for form, loop in forms.items()
    }
    right = [online.correct(q[:t], k[:t], v[:t], b) for t, b in SIZES]
    for key, results in got.items():
        assert any(not align.close(r, c) for r, c in zip(results, right, strict=True)), key  # the check's tolerance
    for a, ra in got.items():
        for b, rb in got.items():
            if a[0] != b[0]:
                assert any(not align.close(x, y) for x, y in zip(ra, rb, strict=True)), (a, b)


def test_only_a_size_that_does_not_divide_t_shows_a_dropped_tail() -> None:
    q, k, v = _inputs()
    tail = online.MISTAKES["flash_tail_dropped"]["tail"]
    assert np.array_equal(tail(q, k, v, 2), online.correct(q, k, v, 2))
    assert not np.allclose(tail(q, k, v, 4), online.correct(q, k, v, 4))


def test_a_crash_at_one_size_is_named_with_it_and_bad_subjects_are_refused(tmp_path: Path) -> None:
    code = tmp_path / "fixed.py"
    code.write_text(
        "def flash_attention(q, k, v, block_size):\n    return v * 1.0  # each token its own value\n"
        "\n\nclass NotAFunction:\n    pass\n",
        encoding="utf-8",
    )
    wrong = CliRunner().invoke(app, ["check", f"{code}:flash_attention", "--lesson", "flash"])
    assert wrong.exit_code == 1 and "No entry of the catalogue" in wrong.output, wrong.output  # not attention
    cls = CliRunner().invoke(app, ["check", f"{code}:NotAFunction", "--lesson", "flash"])
    assert cls.exit_code == 2 and "checks a function" in cls.output and "Traceback" not in cls.output
    sized = CliRunner().invoke(app, ["check", f"{code}:flash_attention", "--lesson", "flash", "--d-out", "4"])
    assert sized.exit_code == 2 and "do not apply" in sized.output
    crash = tmp_path / "crash.py"
    crash.write_text(
        "def flash_attention(q, k, v, block_size):\n    assert block_size == 2, 'only blocks of two'\n    return v\n",
        encoding="utf-8",
    )
    out = CliRunner().invoke(app, ["check", f"{crash}:flash_attention", "--lesson", "flash"])
    assert out.exit_code == 2 and "block_size = 4" in out.output and "crash.py:2" in out.output, out.output


def test_the_papers_two_tile_sizes_each_get_the_block_size() -> None:
    """``(Q, K, V, B_r, B_c)`` is called with the block size twice; ``(q, k, v, block_size, causal=True)`` once."""
    _block_args = flashcheck._block_args

    def two(q: object, k: object, v: object, B_r: int, B_c: int) -> None: ...  # the paper's names

    def one(q: object, k: object, v: object, block_size: int, causal: bool = True) -> None: ...

    assert _block_args(two) == 2 and _block_args(one) == 1 and _block_args(len) == 1
