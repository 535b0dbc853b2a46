"""``attn-trace notebook``: a Jupyter notebook that walks through a lesson and recomputes it in torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tracer.cli.group import UserError, app, status, write_output
from tracer.cli.options import backward_options, build_trace, input_options
from tracer.message import Message
from tracer.present.strings import LANGS


@app.command()
@input_options
@backward_options
@click.option("--lang", type=click.Choice(LANGS), default=LANGS[0], show_default=True, help="Notebook language.")
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path), help="Notebook file to write (.ipynb).")
@click.option("--force", is_flag=True, help="Overwrite an existing notebook.")
def notebook(lang: str, output: Path, force: bool, **options: Any) -> None:
    """Write a walk-through Jupyter notebook: the lesson's prose, and torch code that recomputes every stage.

    \b
    attn-trace notebook -o simple.ipynb                  the tutorial's example
    attn-trace notebook --lang zh -o simple.zh.ipynb     the same in Chinese
    attn-trace notebook -o t.ipynb --pipeline my_lesson.py:build
                                                         your own pipeline, re-run
                                                         from its folder
    """
    from tracer.present import notebook as notebooks

    if output.suffix != ".ipynb":
        raise UserError(Message("cli.notebook_file_name_ends", output=str(output)))
    if options.get("pipeline") is None and options.get("torch_fn") is None:
        notebooks.writes_cells(options["lesson"])  # a lesson without cells says so before it computes anything
    t = build_trace(**options)
    data = notebooks.build(t, lang, options.get("pipeline"))
    write_output(data, str(output), force)
    status(f"wrote {output}: {len(data):,} bytes")
