"""Text for a terminal fits 80 columns, measured as a terminal measures it, and speaks the page's languages."""

from __future__ import annotations

from functools import cache

import pytest
from click.testing import CliRunner

import tracer
from tracer.cli import app
from tracer.core import portable
from tracer.present.explain import explain
from tracer.present.termtext import COLUMNS, pad, width, wrap


@cache
def shown(lesson: str) -> tracer.Trace:
    return portable.shown(tracer.trace_lesson(lesson))


def sample(t: tracer.Trace) -> list[str]:
    """Ids across the trace: every node's first and last element, and the whole node."""
    out = []
    for node in t.nodes:
        steps = list(t.steps(pattern=f"{node.name}[*]")) if node.axes else []
        out += [s.id for s in (steps[:1] + steps[-1:])] + [node.name]
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", ["simple", "causal", "multihead"])
def test_every_explanation_fits_80_columns_and_loses_nothing(lesson: str, lang: str) -> None:
    t = shown(lesson)
    ids = sample(t)
    assert len(ids) > 30
    for step_id in ids:
        text = explain(t, step_id, lang=lang, cols=COLUMNS)
        long = [line for line in text.split("\n") if width(line) > COLUMNS]
        assert not long, f"{step_id}: {long[0]!r} is {width(long[0])} columns"
        one = explain(t, step_id, lang=lang)
        assert "".join(text.split()) == "".join(one.split())  # only line breaks and indents were added


def test_lines_break_between_steps_then_terms_never_inside_a_number() -> None:
    line = "z[2,1] = Σ_j alpha[2,j] × x[j,1] = " + " + ".join(["0.1385×0.43"] * 8) + " = 0.4419"
    lines = wrap(line, 40)
    assert all(width(x) <= 40 for x in lines)
    assert lines[0] == "z[2,1] = Σ_j alpha[2,j] × x[j,1]"
    assert all(x.startswith("    ") for x in lines[1:]) and lines[-1].endswith(" = 0.4419")
    for x in lines:
        assert all(tok.count(".") <= 2 for tok in x.split())  # no number was cut


def test_width_counts_terminal_columns() -> None:
    assert width("query") == 5 and width("注意力") == 6 and width("e\u0301") == 1
    assert pad("分数", 6) == "分数  " and width(pad("分数", 6)) == width(pad("score", 6)) == 6


def test_explain_speaks_chinese_and_refuses_other_languages() -> None:
    runner = CliRunner()
    zh = runner.invoke(app, ["explain", "x[2,1]", "--lang", "zh"])
    assert zh.exit_code == 0
    assert "运算：input" in zh.output and "第 2 个词元（'journey'）的第 1 个分量" in zh.output
    assert "op:" not in zh.output and "an input" not in zh.output
    bad = runner.invoke(app, ["explain", "x[2,1]", "--lang", "fr"])
    assert bad.exit_code == 2 and "'--lang'" in bad.output


def test_the_check_table_lines_up_in_chinese() -> None:
    from tracer.present.checktext import text

    result = tracer.check(lambda inputs: (inputs @ inputs.T).softmax(-1) @ inputs, lesson="simple")
    rows = [line for line in text(result, "zh").split("\n") if line.startswith("  ") and "  " in line.strip()]
    assert rows
    columns = {width(line[: line.index(line.split()[2])]) for line in rows if len(line.split()) > 2}
    assert len(columns) == 1, rows  # the step ids start in the same terminal column on every row


def test_an_input_matrix_over_query_and_key_is_not_called_a_token_component() -> None:
    """``dropout.keep[1,1]`` is a draw of the dropout mask, not component 1 of token 1."""
    t = tracer.trace_lesson("causal")
    for lang, wrong in (("en", "component"), ("zh", "分量")):
        assert wrong not in explain(t, "dropout.keep[1,1]", lang=lang)
        assert wrong not in explain(t, "mask.tril[2,1]", lang=lang)
    assert "component 1 of token 1" in explain(t, "x[1,1]")
