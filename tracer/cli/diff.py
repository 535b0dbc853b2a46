"""``attn-trace diff``: compare two trace files step by step (exit 0 equal, 1 different, 2 trouble)."""

from __future__ import annotations

from pathlib import Path

import click

from tracer.cli.group import UserError, app, status
from tracer.compare.defaults import DEFAULT_ATOL, DEFAULT_LIMIT, DEFAULT_RTOL
from tracer.errors import TracerError
from tracer.message import Message


@app.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option(
    "--rtol", type=click.FloatRange(min=0), default=DEFAULT_RTOL, show_default=True, help="Relative tolerance."
)
@click.option(
    "--atol", type=click.FloatRange(min=0), default=DEFAULT_ATOL, show_default=True, help="Absolute tolerance."
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Root causes and steps to list.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format."
)
def diff(a: Path, b: Path, rtol: float, atol: float, limit: int, fmt: str) -> None:
    """Compare two trace files step by step, matched by id.

    Values are close when |A-B| <= atol + rtol*|B| (the defaults suit
    float32). Prints counts per stage, the root causes (steps that differ
    although their inputs do not) and the first differing steps.

    Exit status: 0 equal within tolerance, 1 different, 2 trouble (an
    unreadable, truncated, tampered or unknown-version file).
    """
    from tracer.compare import diffreport
    from tracer.compare.differ import diff as diff_traces

    try:
        result = diff_traces(a, b, rtol=rtol, atol=atol, limit=limit)
        out = diffreport.dumps(result) if fmt == "json" else diffreport.text(result)
    except TracerError:
        raise
    except Exception as e:  # a crash must never look like "different" (exit 1)
        raise UserError(Message("cli.cannot_diff", a=str(a), b=str(b), type=type(e).__name__, error=str(e))) from None
    for note in result.notes:
        status(f"note: {note}")
    click.echo(out, nl=False)
    if not result.equal:
        raise SystemExit(1)
