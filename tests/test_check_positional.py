"""A module called by position never gets one of the lesson's arguments in a parameter named for another.

The book's causal class, ``CausalAttention(d_in, d_out, context_length,
dropout, qkv_bias=False)``, checked against ``multihead`` used to be built as
``CausalAttention(3, 8, 6, 0.5, 2)``: the number of heads went into
``qkv_bias``, the projections got biases, and the verdict was DIFFERS.  It
is refused instead, saying the class takes no number of heads.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tracer.cli import app
from tracer.compare.check.build import misplaced

CORPUS = Path(__file__).parent / "check_corpus"


class Causal:
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False) -> None:
        pass


class Reordered:
    def __init__(self, d_in: int, d_out: int, num_heads: int, context_length: int, dropout: float, extra: int) -> None:
        pass


class Plain:
    def __init__(self, a: int, b: int, c: int, d: float, e: int) -> None:
        pass


def test_a_parameter_named_for_another_argument_is_never_filled_by_position() -> None:
    multihead = ("d_in", "d_out", "context_length", "dropout", "num_heads")
    said = misplaced(Causal, multihead)
    assert said == "Causal takes no number of heads (num_heads): the lesson would pass it as qkv_bias"
    assert misplaced(Causal, multihead[:4]) is None  # the causal lesson's own arguments fit
    assert misplaced(Reordered, multihead) == (
        "Reordered takes the lesson's arguments in another order: context_length would go to num_heads"
    )
    assert misplaced(Plain, multihead) is None  # names that say nothing: by position, as before


def test_check_says_the_class_takes_no_heads() -> None:
    spec = f"{CORPUS / 'causal_book.py'}:CausalAttention"
    result = CliRunner().invoke(app, ["check", spec, "--lesson", "multihead"])
    assert result.exit_code == 2, result.output
    assert result.output == (
        "Error: CausalAttention takes no number of heads (num_heads): the lesson would pass it as qkv_bias\n"
    )


def test_the_same_class_against_its_own_lesson_still_matches() -> None:
    result = CliRunner().invoke(app, ["check", f"{CORPUS / 'causal_book.py'}:CausalAttention", "--lesson", "causal"])
    assert result.exit_code == 0, result.output
