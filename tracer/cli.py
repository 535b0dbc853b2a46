"""attn-trace: the command-line app (a thin click layer over ``tracer``).

Exit codes: 0 ok, 1 differences found (``diff``), 2 bad usage or bad input,
reported in one line with no traceback.  Results go to stdout or ``-o``;
status lines go to stderr.  Heavy imports (torch, matplotlib) happen inside
the commands that need them, so ``--help`` stays fast.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

import tracer
from tracer.compare.defaults import DEFAULT_ATOL, DEFAULT_LIMIT, DEFAULT_RTOL
from tracer.errors import InputError, InputNote, TracerError
from tracer.present.strings import LANGS

F = TypeVar("F", bound=Callable[..., Any])


class UserError(click.ClickException):
    """Bad input or usage: one line on stderr, exit code 2."""

    exit_code = 2


class App(click.Group):
    """A group that turns the tracer's own errors into one-line exit-2 messages."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InputError as e:
            flag = OPTION_OF.get(e.arg or "")
            raise UserError(f"{flag} {e.problem}" if flag else str(e)) from None
        except TracerError as e:
            raise UserError(str(e)) from None


OPTION_OF = {
    "text": "--text",
    "dim": "--dim",
    "seed": "--seed",
    "d_out": "--d-out",
    "spec": "--pipeline",
    "torch": "--torch",
}
"""The CLI option that carries each library argument named in an :class:`~tracer.errors.InputError`."""


@click.group(cls=App, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(tracer.__version__, "--version", prog_name="attn-trace")
def app() -> None:
    """Trace every intermediate value of an attention computation, and explain it.

    \b
    attn-trace steps --stage scores        list the score steps of the tutorial's example
    attn-trace explain "omega[2,1]"        one step, written out as on a board
    attn-trace trace -o trace.json         save the whole trace
    """


# -- shared options -----------------------------------------------------------
def input_options(func: F) -> F:
    """The options that choose what gets traced (shared by every command that computes)."""
    opts = [
        click.option("--lesson", default="simple", show_default=True, help="Which lesson to trace (see `lessons`)."),
        click.option(
            "--inputs",
            "inputs_file",
            type=click.Path(dir_okay=True, path_type=Path),
            help="Embeddings file: .json, .csv, .npy or .pt (default: the tutorial's six tokens).",
        ),
        click.option("--tokens", help="Token labels for the rows, separated by spaces."),
        click.option("--text", help="Embed these whitespace-separated tokens with seeded random numbers."),
        click.option("--dim", type=int, help="With --text: embedding size (default 3)."),
        click.option("--seed", type=int, help="With --text: random seed (default 0)."),
        click.option("--query", type=int, help="1-based focus query (default 2, or 1 for a single token)."),
        click.option(
            "--dtype",
            type=click.Choice(["float32", "float64"]),
            default="float32",
            show_default=True,
            help="Precision the values are computed in.",
        ),
        click.option("--weights", help="Lesson trainable: rand (default, seed 123), linear (seed 789) or a file."),
        click.option("--d-out", "d_out", type=int, help="Lessons with projections: output size (default 2)."),
        click.option("--pipeline", help="Your own pipeline instead of a lesson: module:function or file.py:function."),
        click.option(
            "--torch",
            "torch_fn",
            metavar="FILE.py:FN",
            help="Capture your own torch code: FN() builds and runs it and returns the output tensor.",
        ),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def build_trace(
    lesson: str,
    inputs_file: Path | None,
    tokens: str | None,
    text: str | None,
    dim: int | None,
    seed: int | None,
    query: int | None,
    dtype: str,
    weights: str | None = None,
    d_out: int | None = None,
    pipeline: str | None = None,
    torch_fn: str | None = None,
) -> tracer.Trace:
    """Validate the input options and run the lesson."""
    from tracer import api
    from tracer.record import inputs

    if torch_fn is not None:
        others = {"--lesson": lesson != "simple", "--inputs": inputs_file is not None, "--text": text is not None}
        others.update({"--dim": dim is not None, "--seed": seed is not None, "--dtype": dtype != "float32"})
        others.update(
            {"--weights": weights is not None, "--d-out": d_out is not None, "--pipeline": pipeline is not None}
        )
        clash = [k for k, v in others.items() if v]
        if clash:
            raise UserError(
                f"--torch runs your code as it is: {', '.join(clash)} do not apply (only --tokens, --query)"
            )
        from tracer.record.capture import script

        return script.run(torch_fn, tokens.split() if tokens is not None else None, query)
    if text is None and (dim is not None or seed is not None):
        raise UserError("--dim and --seed go with --text")
    if text is not None and (inputs_file is not None or tokens is not None):
        raise UserError("--text cannot be combined with --inputs or --tokens")
    labels = tokens.split() if tokens is not None else None
    data: Any = None
    source: dict[str, Any] | None = None
    if inputs_file is not None:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", InputNote)
            data, file_tokens = inputs.read_file(inputs_file)
        for w in said:
            status(f"note: {w.message}")
        labels = labels if labels is not None else file_tokens
        source = {"kind": "file", "name": inputs_file.name}
    elif text is not None:
        d, s = 3 if dim is None else dim, 0 if seed is None else seed
        data, labels = inputs.from_text(text, d, s)
        source = {"kind": "text", "text": text, "dim": d, "seed": s}
    elif labels is not None:
        data, _ = inputs.tutorial()
    ex = api.example(data, labels, query, dtype, source)
    if pipeline is not None:
        from tracer.record import custom

        if lesson != "simple" or weights is not None or d_out is not None:
            raise UserError("--pipeline replaces the lesson: --lesson, --weights and --d-out do not apply")
        return custom.run(pipeline, ex)
    extra: dict[str, Any] = {}
    if weights is not None:
        extra["weights"] = weights
    if d_out is not None:
        extra["d_out"] = d_out
    return api.run(lesson, ex, **extra)


def trace_source(from_file: Path | None, options: dict[str, Any], check: bool = False) -> tracer.Trace:
    """A saved trace (``--from``) or a freshly computed one, never both.

    With ``check``, a saved trace is verified, and values that do not follow
    from their inputs are named once on stderr (``explain`` and ``report``).
    """
    if from_file is not None:
        given = [k for k, v in options.items() if v is not None and k not in ("lesson", "dtype")]
        if given or options.get("dtype") != "float32" or options.get("lesson") != "simple":
            raise UserError("--from reads a saved trace: input options cannot be combined with it")
        t = tracer.load(from_file)
        if check and not (result := t.verify()).ok:
            status(f"note: {from_file.name}: {result.summary()}")
        return t
    return build_trace(**options)


def from_option(func: F) -> F:
    """``--from FILE``: read a saved trace instead of computing one."""
    return click.option(
        "--from", "from_file", type=click.Path(path_type=Path), help="Read a saved trace file instead of computing."
    )(func)


def decimals_option(func: F) -> F:
    """``--decimals N`` (default 4, as the tutorial prints)."""
    return click.option(
        "--decimals", type=click.IntRange(0, 12), default=4, show_default=True, help="Decimals to show."
    )(func)


def write_output(data: bytes, output: str | None, force: bool) -> None:
    """Write to stdout (no -o, or -o -), or atomically to a file that must not exist unless --force.

    A name ending in ``/`` names a folder, and a symbolic link is refused
    rather than followed or replaced (see ``docs/security.md``).
    """
    from tracer.core.files import write_atomic

    if output in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    path = Path(output)
    if output.endswith(("/", os.sep)) or path.is_dir():
        raise UserError(f"{output} is a folder; give a file name")
    if path.exists() and not force:
        raise UserError(f"{path} already exists; use --force to overwrite it")
    try:
        write_atomic(path, data)
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror or e}") from None


def status(message: str) -> None:
    """A status line on stderr."""
    click.echo(message, err=True)


# -- commands -----------------------------------------------------------------
@app.command()
def lessons() -> None:
    """List the lessons that can be traced."""
    from tracer.record.pipelines import LESSONS

    width = max(map(len, LESSONS))
    for name, (_, summary) in LESSONS.items():
        click.echo(f"{name:<{width}}  {summary}")


@app.command()
@input_options
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
@click.argument("pattern", required=False)
@click.option("--stage", help="Only steps of this stage (scores, normalize, …; an unknown one lists the lesson's).")
@click.option("--limit", type=click.IntRange(min=1), help="Stop after this many steps.")
@from_option
@decimals_option
@input_options
def steps(
    pattern: str | None, stage: str | None, limit: int | None, from_file: Path | None, decimals: int, **options: Any
) -> None:
    """List step ids with their values.

    PATTERN is a step id (a slice such as `omega[2]` lists its elements) or a
    glob where `*` and `?` are wild and brackets are literal: `'omega[2,*]'`.
    """
    from tracer.present.explain import value_text

    t = trace_source(from_file, options)
    if stage is not None and stage not in t.stages:
        raise UserError(f"unknown stage {stage!r}: this trace has {', '.join(t.stages)}")
    it: Iterator[tracer.Step]
    if pattern is not None and "*" not in pattern and "?" not in pattern:
        it = (s for s in t.expand(t[pattern]) if stage is None or s.stage == stage)
    else:
        it = t.steps(stage=stage, pattern=pattern)
    shown = 0
    out = click.get_text_stream("stdout")
    for s in it:
        if limit is not None and shown >= limit:
            break
        if s.is_element:
            val = value_text(t, s.id, decimals)
        else:
            val = "<" + " x ".join(map(str, s.node.value.shape)) + " tensor>"
        out.write(f"{s.id}\t{val}\n")
        shown += 1
    if shown == 0:
        raise UserError(f"no steps match {pattern or stage!r}")


@app.command()
@click.argument("step_id")
@from_option
@decimals_option
@input_options
def explain(step_id: str, from_file: Path | None, decimals: int, **options: Any) -> None:
    """Explain one step as on a board: its formula, the numbers that went in, and its inputs' ids."""
    from tracer.present.explain import explain as explain_step

    t = trace_source(from_file, options, check=True)
    click.echo(explain_step(t, step_id, decimals))


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
        raise UserError(f"cannot diff {a} and {b}: {type(e).__name__}: {e}") from None
    for note in result.notes:
        status(f"note: {note}")
    click.echo(out, nl=False)
    if not result.equal:
        raise SystemExit(1)


@app.command()
@click.argument("file", type=click.Path(path_type=Path))
def verify(file: Path) -> None:
    """Recompute every value of a trace file from its recorded operands.

    The digest of a trace file only catches accidents: anyone can edit a value
    and recompute it. This checks that each value follows from its inputs
    with its recorded op (exactly for products, sums, quotients, maxima and
    masks; to a few units in the last place for exp and softmax) and lists
    those that do not.

    Exit status: 0 every value follows, 1 some do not, 2 an unreadable file.
    """
    t = tracer.load(file)
    result = t.verify()
    skipped = f"; not recomputed: {', '.join(result.unchecked)}" if result.unchecked else ""
    if result.ok:
        click.echo(f"{file.name}: all {result.checked} recomputed nodes follow from their inputs{skipped}")
        return
    click.echo(f"{file.name}: {result.summary()}{skipped}")
    raise SystemExit(1)


@app.command()
@from_option
@decimals_option
@input_options
@click.option("--lang", type=click.Choice(LANGS), default=LANGS[0], show_default=True, help="Report language.")
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

    \b
    attn-trace report                      the tutorial's example, in English
    attn-trace report --lang zh            the same in Chinese
    attn-trace report --from trace.json    render a saved trace without recomputing
    """
    from tracer.core.files import write_folder
    from tracer.present import report as reports

    if fragment and fmt == "md":
        raise UserError("--fragment is an HTML form: use it with --format html or all")
    t = trace_source(from_file, options, check=True)
    folder = output if output is not None else Path("reports") / reports.slug(t) / lang
    if folder.is_symlink():
        raise UserError(f"{folder} is a symbolic link: attn-trace does not write through links; name the target itself")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder} exists and is not a folder")
    formats = ("html", "md") if fmt == "all" else (fmt,)
    files = reports.build(t, lang, formats, decimals, fragment)
    try:
        write_folder(folder, files, force, reports.is_report_file)
    except FileExistsError as e:
        raise UserError(f"{e.filename} already exists; use --force to overwrite the report") from None
    except OSError as e:
        raise UserError(f"cannot write into {folder}: {e.strerror or e}") from None
    size = sum(len(d) for d in files.values())
    status(f"wrote {folder}: {', '.join(files)} ({size:,} bytes)")


@app.command()
@input_options
@click.option("--lang", type=click.Choice(LANGS), default=LANGS[0], show_default=True, help="Notebook language.")
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path), help="Notebook file to write (.ipynb).")
@click.option("--force", is_flag=True, help="Overwrite an existing notebook.")
def notebook(lang: str, output: Path, force: bool, **options: Any) -> None:
    """Write a walk-through Jupyter notebook: the lesson's prose, and torch code that recomputes every stage.

    \b
    attn-trace notebook -o simple.ipynb                  the tutorial's example
    attn-trace notebook --lang zh -o simple.zh.ipynb     the same in Chinese
    attn-trace notebook --pipeline examples/temperature.py:build -o t.ipynb
                                                         your own pipeline, re-run from the notebook's folder
    """
    from tracer.present import notebook as notebooks

    if output.suffix != ".ipynb":
        raise UserError(f"{output}: a notebook file name ends in .ipynb")
    t = build_trace(**options)
    data = notebooks.build(t, lang, options.get("pipeline"))
    write_output(data, str(output), force)
    status(f"wrote {output}: {len(data):,} bytes")


@app.command()
@click.argument("spec", metavar="FILE.py:NAME")
@click.option(
    "--lesson",
    type=click.Choice(["simple", "trainable", "causal", "multihead"]),
    required=True,
    help="The lesson the code should compute.",
)
@click.option(
    "--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True, help="Language of the verdict."
)
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
def check(spec: str, lesson: str, lang: str, fmt: str, output: str | None, force: bool, verbose: bool) -> None:
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
        obj, source = load(spec)
        result = run_check(obj, lesson, source)
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


def main() -> None:
    """Console-script entry point."""
    import signal

    if hasattr(signal, "SIGPIPE"):  # `attn-trace steps | head` ends quietly, as `cat` would
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    app(prog_name="attn-trace")


if __name__ == "__main__":
    main()
