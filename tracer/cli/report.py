"""``attn-trace report``: the walk-through report (HTML, Markdown, figures) of one trace or of many."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tracer.api import DEFAULT_LESSON
from tracer.cli.group import UserError, app, status
from tracer.cli.options import backward_options, build_trace, decimals_option, from_option, input_options, trace_source
from tracer.core.files import quoted
from tracer.message import Message
from tracer.present.strings import LANGS


@app.command()
@from_option
@decimals_option
@input_options
@backward_options
@click.option("--lang", default=LANGS[0], show_default=True, help="Report language: en, zh, a list (en,zh) or all.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "md", "all"]),
    default="all",
    show_default=True,
    help="Which files to write.",
)
@click.option("--fragment", is_flag=True, help="Write the HTML as one class-scoped <section> (fragment.html).")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="Folder to write into (default: reports/<example>/<lang>)."
)
@click.option("--force", is_flag=True, help="Overwrite existing report files.")
def report(
    from_file: Path | None,
    decimals: int,
    lang: str,
    fmt: str,
    fragment: bool,
    output: Path | None,
    force: bool,
    **options: Any,
) -> None:
    """Write the walk-through report (HTML and Markdown, with figures) of a trace.

    --lesson and --lang also take lists or `all`: every combination is
    rendered in one process into reports/<example>/<lang> (or under -o),
    one status line per report.

    \b
    attn-trace report                      the tutorial's example, in English
    attn-trace report --lang zh            the same in Chinese
    attn-trace report --from trace.json    a saved trace, not recomputed
    attn-trace report --lesson all --lang all --force    every committed report
    """
    from tracer import batch
    from tracer.record import registry

    if fragment and fmt == "md":
        raise UserError(Message("cli.fragment_html_form_use"))
    try:
        lessons = batch.choices(options.pop("lesson"), registry.names(), "--lesson")
        langs = batch.choices(lang, batch.LANGS, "--lang")
    except batch.BadChoice as e:  # worded as every command words it (tracer.errors.unknown)
        raise UserError(e.detail) from None
    if from_file is not None:
        if lessons != [DEFAULT_LESSON]:
            raise UserError(Message("cli.reads_saved_trace_lesson"))
        traces = [trace_source(from_file, {**options, "lesson": DEFAULT_LESSON}, check=True)]
    else:
        traces = [build_trace(lesson=name, **options) for name in lessons]
    formats = ("html", "md") if fmt == "all" else (fmt,)
    try:
        batch.write_all(batch.jobs(traces, langs, output), formats, decimals, fragment, force, status)
    except batch.ReportExists as e:
        raise UserError(Message("cli.report_exists", file=quoted(e.path))) from None
