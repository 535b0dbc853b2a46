"""``attn-trace check``: a student's attention code against a lesson (exit 0 matches, 1 differs, 2 trouble).

Capturing the user's own torch code for the other commands is ``--torch``
(:func:`tracer.cli.options.build_trace`).
"""

from __future__ import annotations

import click

from tracer.cli.group import UserError, app, status, write_output
from tracer.present.strings import LANGS
from tracer.record.pipelines import LESSONS


@app.command()
@click.argument("spec", metavar="FILE.py:NAME")
@click.option(
    "--lesson",
    type=click.Choice(list(LESSONS)),
    required=True,
    help="The lesson the code should compute.",
)
@click.option("--lang", type=click.Choice(LANGS), default=LANGS[0], show_default=True, help="Language of the verdict.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "html"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option("-o", "--output", help="File to write (default: stdout).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option("--verbose", is_flag=True, help="Show your code's traceback on a crash, and the nearest tensors.")
@click.option(
    "--d-out",
    "d_out",
    type=click.IntRange(min=1),
    help="Build your module this wide instead of the lesson's d_out (not for simple; multihead: a multiple of 2).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    help="Seconds your code may take to import, build and run (default 60; 0: no limit).",
)
def check(
    spec: str,
    lesson: str,
    lang: str,
    fmt: str,
    output: str | None,
    force: bool,
    verbose: bool,
    d_out: int | None,
    timeout: float | None,
) -> None:
    """Check your attention code against a lesson: does it compute the lesson at every stage?

    \b
    attn-trace check attn.py:CausalAttention --lesson causal
    attn-trace check attn.py:self_attention --lesson simple --lang zh
    attn-trace check attn.py:MultiHeadAttention --lesson multihead --format html -o check.html

    NAME is what the book's reader writes: for `simple` a function
    f(inputs) -> context vectors; for the other lessons a module class with
    the book's constructor (docs/check.md). Exit status: 0 matches at every
    stage, 1 differs (the first divergence and its diagnosis are printed),
    2 trouble (bad file, wrong signature, a crash in your code: one line;
    the traceback with --verbose).
    """
    from tracer.compare.check import check as run_check
    from tracer.compare.check.student import StudentError, load

    try:
        obj, source = load(spec, timeout)
        result = run_check(obj, lesson, source, timeout=timeout, d_out=d_out)
    except StudentError as e:
        if verbose and e.details:
            click.echo(e.details.rstrip(), err=True)
        raise UserError(str(e)) from None
    if fmt == "json":
        data = result.dumps(lang).encode("utf-8")
    elif fmt == "html":
        from tracer.present.checkpage import render_check

        data = render_check(result, lang).encode("utf-8")
    else:
        data = result.explain(lang, verbose).encode("utf-8")
    write_output(data, output, force)
    if output not in (None, "-"):
        status(f"wrote {output}")
    if not result.ok:
        raise SystemExit(1)
