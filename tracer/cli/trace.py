"""Commands that make, list and check traces: ``lessons``, ``trace`` and ``verify``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

import tracer
from tracer.cli.group import UserError, app, echo, status, write_output
from tracer.cli.options import backward_options, build_trace, input_options
from tracer.core.files import quoted
from tracer.message import Message


@app.command()
@click.option("--options", "of", metavar="NAME", help="List lesson NAME's own options: flag, type, default, meaning.")
def lessons(of: str | None) -> None:
    """List the lessons that can be traced: the built-in ones and those installed packages add.

    \b
    attn-trace lessons                  every lesson, in course order
    attn-trace lessons --options rope   rope's own options and their flags
    """
    import textwrap

    from tracer.cli import lessonopts
    from tracer.core.fmt import COLUMNS
    from tracer.record import registry

    if of is not None:
        lines = lessonopts.table(of)  # an unknown name: one line, exit 2 (the registry's words)
        if not lines:
            click.echo(f"lesson {of} has no options of its own")
        for line in lines:
            click.echo(textwrap.fill(line, COLUMNS, subsequent_indent="    "))
        return

    lessons = registry.all_lessons()
    width = max(len(lesson.name) for lesson in lessons)
    hang = " " * (width + 2)  # a long summary goes on under itself, within the 80 columns
    for lesson in lessons:
        click.echo(
            textwrap.fill(lesson.summary, COLUMNS, initial_indent=f"{lesson.name:<{width}}  ", subsequent_indent=hang)
        )


@app.command()
@input_options
@backward_options
@click.option("-o", "--output", help="Trace file to write (default: stdout).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
def trace(output: str | None, force: bool, **options: Any) -> None:
    """Compute a trace and write it as a versioned JSON file."""
    from tracer.core.serialize import dumps

    t = build_trace(**options)
    data = dumps(t).encode("utf-8")
    write_output(data, output, force)
    if output not in (None, "-"):
        status(f"wrote {output}: {len(t):,} steps, {len(data):,} bytes")


@app.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--backward", is_flag=True, help="The file must hold a backward pass; say how many of its nodes were recomputed."
)
def verify(file: Path, backward: bool) -> None:
    """Recompute every value of a trace file from its recorded operands.

    The digest of a trace file only catches accidents: anyone can edit a value
    and recompute it. This checks that each value follows from its inputs
    with its recorded op (exactly for products, sums, quotients, maxima and
    masks; to a few units in the last place for exp; within the bound the
    maths gives for a softmax and for a library's sums, such as a BLAS
    product or a linear layer with its bias, beside their left-to-right
    form) and lists those that do not.

    Exit status: 0 every value follows, 1 some do not, 2 an unreadable file.
    """
    t = tracer.load(file)
    if backward and not isinstance(t.meta.get("backward"), dict):
        raise UserError(Message("cli.holds_no_backward_pass", file=quoted(file.name)))
    stages = t.meta["backward"]["stages"] if backward else []  # its shape checked when the file was read
    result = t.verify()
    skipped = f"; not recomputed: {', '.join(result.unchecked)}" if result.unchecked else ""
    if backward:
        grads = sum(n.stage in stages and n.op != "input" and n.name not in result.unchecked for n in t.nodes)
        skipped = f" ({grads} of them the backward pass's){skipped}"
    if result.ok:
        echo(f"{file.name}: all {result.checked} recomputed nodes follow from their inputs{skipped}")
        return
    echo(f"{file.name}: {result.summary()}{skipped}")
    raise SystemExit(1)
