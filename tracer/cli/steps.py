"""Commands that read a trace step by step: ``steps`` lists ids and values, ``explain`` writes one step out."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

import tracer
from tracer.cli.group import UserError, app, status
from tracer.cli.options import backward_options, decimals_option, from_option, input_options, trace_source
from tracer.message import Message
from tracer.present.strings import LANGS


@app.command()
@click.argument("pattern", required=False)
@click.option("--stage", help="Only steps of this stage (scores, normalize, …; an unknown one lists the lesson's).")
@click.option("--limit", type=click.IntRange(min=1), help="Stop after this many steps.")
@from_option
@decimals_option
@input_options
@backward_options
def steps(
    pattern: str | None, stage: str | None, limit: int | None, from_file: Path | None, decimals: int, **options: Any
) -> None:
    """List step ids with their values.

    PATTERN is a step id (a slice such as `omega[2]` lists its elements) or a
    glob where `*` and `?` are wild and brackets are literal: `'omega[2,*]'`.
    """
    from tracer.core import portable
    from tracer.core.fmt import printable
    from tracer.present.explain import value_text

    t = portable.shown(trace_source(from_file, options))
    if stage is not None and stage not in t.stages:
        raise UserError(Message("cli.unknown_stage_trace", stage=repr(stage), stages=", ".join(t.stages)))
    it: Iterator[tracer.Step]
    if pattern is not None and "*" not in pattern and "?" not in pattern:
        it = (s for s in t.expand(t[pattern]) if stage is None or s.stage == stage)
    else:
        it = t.steps(stage=stage, pattern=pattern)
    shown = nans = 0
    out = click.get_text_stream("stdout")
    for s in it:
        if limit is not None and shown >= limit:
            break
        if s.is_element:
            val = value_text(t, s.id, decimals)
            nans += _is_nan(s.value)
        else:
            val = "<" + " x ".join(map(str, s.node.value.shape)) + " tensor>"
        out.write(f"{printable(s.id)}\t{val}\n")
        shown += 1
    if shown == 0:
        raise UserError(Message("cli.no_steps_match", pattern=repr(pattern or stage)))
    if nans:  # a NaN printed without a word reads as a result; it is an overflow upstream
        status(
            f"note: {nans} of the values shown {'is' if nans == 1 else 'are'} NaN: a step before them overflowed "
            f"the trace's {t.meta.get('dtype', 'float32')} range (inputs as large as 1.8e19, or near float32's "
            "largest, 3.4e38, do); `explain` one of them to see where"
        )


def _is_nan(value: object) -> bool:
    """True for a NaN value (an element's value is a number)."""
    return isinstance(value, float) and math.isnan(value)


@app.command()
@click.argument("step_id")
@from_option
@decimals_option
@input_options
@backward_options
@click.option(
    "--lang", type=click.Choice(list(LANGS)), default=LANGS[0], show_default=True, help="Language of the words."
)
def explain(step_id: str, from_file: Path | None, decimals: int, lang: str, **options: Any) -> None:
    """Explain one step as on a board: its formula, the numbers that went in, and its inputs' ids.

    Lines fit 80 columns, broken before = + and − as on a board.
    """
    from tracer.core import portable
    from tracer.present.explain import explain as explain_step
    from tracer.present.termtext import COLUMNS

    t = portable.shown(trace_source(from_file, options, check=True))
    click.echo(explain_step(t, step_id, decimals, lang=lang, cols=COLUMNS))  # each line already printable
