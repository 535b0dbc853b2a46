"""``attn-trace figures``: every figure of a report as a standalone PNG, PDF or SVG file, for slides."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import click

from tracer.api import DEFAULT_LESSON
from tracer.cli.group import UserError, app, status
from tracer.cli.options import backward_options, build_trace, from_option, input_options, trace_source
from tracer.core.files import quoted
from tracer.present.strings import LANGS


@app.command()
@from_option
@input_options
@backward_options
@click.option("--lang", type=click.Choice(list(LANGS)), default=LANGS[0], show_default=True, help="Axis titles.")
@click.option("--format", "fmt", type=click.Choice(["png", "pdf", "svg"]), default="png", show_default=True)
@click.option("--dpi", type=click.IntRange(20, 1200), default=200, show_default=True, help="Resolution of PNG files.")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="Folder to write the files into.")
@click.option("--force", is_flag=True, help="Overwrite figure files that already exist.")
def figures(from_file: Path | None, lang: str, fmt: str, dpi: int, output: Path, force: bool, **options: Any) -> None:
    """Write every figure of a report as its own file (drawn with matplotlib), named as in the report.

    \b
    attn-trace figures -o slides/     the tutorial's six figures, PNG at 200 dpi
    attn-trace figures --lesson multihead --format pdf -o slides/
    attn-trace figures --from trace.json --format svg -o slides/
    """
    from tracer import plot

    if from_file is not None:
        if options.get("lesson", DEFAULT_LESSON) != DEFAULT_LESSON:
            raise UserError("--from reads a saved trace: --lesson cannot be combined with it")
        trace = trace_source(from_file, {**options, "lesson": DEFAULT_LESSON}, check=True)
    else:
        trace = build_trace(**options)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("figures need matplotlib: pip install 'attn-trace[plot]'") from None
    except ValueError as e:  # MPLBACKEND=bogus, a bad matplotlibrc: refused by matplotlib on import
        raise UserError(f"matplotlib cannot start: {str(e).partition('; supported values')[0]}") from None
    if output.exists() and not output.is_dir():
        raise UserError(f"{output} exists and is not a folder")
    made = plot.report_figures(trace, lang)
    paths = {name: output / f"{name}.{fmt}" for name in made}
    clash = [p for p in paths.values() if p.exists() or p.is_symlink()]
    if clash and not force:
        raise UserError(f"{quoted(clash[0])} already exists; use --force to overwrite it")
    files = {f"{name}.{fmt}": _render(draw(), fmt, dpi) for name, draw in made.items()}  # all drawn, then written
    from tracer.core.files import Refused, write_folder

    try:  # staged as a report is: a run killed while writing leaves the old folder or the new one, whole
        left = write_folder(output, files, force, is_figure)
    except FileExistsError as e:
        raise UserError(f"{quoted(e.filename or output)} already exists; use --force to overwrite it") from None
    except Refused as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"cannot write into {quoted(output)}: {e.strerror or e}") from None
    if left:
        status(f"note: {left}")
    status(f"wrote {output}: " + ", ".join(p.name for p in paths.values()))


FIGURE = re.compile(r"fig-[A-Za-z0-9_.-]+\.(png|pdf|svg)")
"""The name of a file ``figures`` writes (``fig-alpha.png``, ``fig-alpha-h1.svg``)."""


def is_figure(name: str) -> bool:
    """Whether a file in the output folder is one ``figures`` writes (any other makes the folder not ours)."""
    return bool(FIGURE.fullmatch(name))


def _render(fig: Any, fmt: str, dpi: int) -> bytes:
    """The figure's file, the same bytes for the same trace (no dates, a fixed SVG id salt)."""
    import matplotlib

    buf = io.BytesIO()
    meta = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None}, "svg": {"Date": None}}[fmt]
    with matplotlib.rc_context({"svg.hashsalt": "attn-trace", "pdf.compression": 6}):
        fig.savefig(buf, format=fmt, dpi=dpi, metadata=meta, facecolor="#ffffff")
    return buf.getvalue()
