"""``attn-trace check``: a student's attention code (or a whole class of it) against a lesson.

Each submission runs in a child process of its own (:mod:`tracer.sandbox`,
:mod:`tracer.checking`): its printing, its working folder, its time and
memory are its own, and only a verdict it sent counts.  Exit status for one
submission: 0 matches, 1 differs, 2 trouble or no verdict; for a class
(:mod:`tracer.cli.classcheck`): 0 when every submission matches, 1 otherwise, 2
when the class itself cannot be checked.  Capturing the user's own torch
code for the other commands is ``--torch`` (:func:`tracer.cli.options.build_trace`).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from tracer.cli.group import UserError, app, status, write_output
from tracer.cli.options import LessonChoice, Limit
from tracer.errors import InputError
from tracer.message import Message
from tracer.present.strings import LANGS
from tracer.record import registry

FORMATS = ["text", "json", "html", "csv", "gradescope"]

TIMEOUT_MOST = 7 * 24 * 3600.0
"""The longest ``--timeout``, in seconds (a week; past it a timer's arithmetic is no longer exact)."""

MEMORY_MOST = float(1 << 30)
"""The largest ``--memory``, in MB (a petabyte: far past any machine, short of overflowing a byte count)."""


@app.command()
@click.argument("spec", metavar="FILE.py:NAME")
@click.option("--lesson", type=LessonChoice(), required=True, help="The lesson the code should compute (`lessons`).")
@click.option("--lang", type=click.Choice(LANGS), default=LANGS[0], show_default=True, help="Language of the verdict.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="Output format.")
@click.option("-o", "--output", help="File to write (default: stdout); for a class in html, a folder.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option("--verbose", is_flag=True, help="Show your code's output and traceback, and the nearest tensors.")
@click.option("--d-in", "d_in", type=click.IntRange(min=1, max=512), help="Width of the embeddings (not for simple).")
@click.option("--d-out", "d_out", type=click.IntRange(min=1), help="Build your module this wide (not for simple).")
@click.option(
    "--heads", type=click.IntRange(min=1, max=64), help="Number of heads (multihead, gqa; default the lesson's)."
)
@click.option(
    "--timeout",
    type=Limit(TIMEOUT_MOST, "seconds"),
    help="Seconds one submission may take to import, build and run (default 60; 0: no limit); then it is killed.",
)
@click.option(
    "--memory",
    type=Limit(MEMORY_MOST, "MB"),
    help="Megabytes of memory one submission may allocate (default 2048; 0: no limit).",
)
@click.option(
    "--points",
    "points_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="--format gradescope: a JSON file of points per stage and visibility (docs/check.md, Grades).",
)
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Submissions checked at once (default: the cores).")
@click.option(
    "--backward",
    is_flag=True,
    help="Check a hand-written backward pass: f(Q, K, V, dO) -> (dQ, dK, dV) or an autograd.Function (docs/check.md).",
)
@click.option(
    "--rope-style",
    "rope_style",
    type=click.Choice(["half", "interleaved"]),
    help="Lesson rope: the pairing your code uses, rotate_half's (x_p, x_p+d/2) (default) or neighbours.",
)
def check(
    spec: str,
    lesson: str,
    lang: str,
    fmt: str,
    output: str | None,
    force: bool,
    verbose: bool,
    d_in: int | None,
    d_out: int | None,
    heads: int | None,
    timeout: float | None,
    memory: float | None,
    jobs: int | None,
    rope_style: str | None,
    backward: bool = False,
    points_file: Path | None = None,
) -> None:
    """Check your attention code against a lesson: does it compute the lesson at every stage?

    \b
    attn-trace check attn.py:CausalAttention --lesson causal
    attn-trace check attn.py:self_attention --lesson simple --lang zh
    attn-trace check mha.py:MultiHead --lesson multihead --format html -o c.html
    attn-trace check 'class/*.py:Causal' --lesson causal --format html -o out/

    NAME is a function f(inputs) for `simple`; for the other lessons a module
    class or any callable that returns a module, called with the lesson's
    sizes by their names (docs/check.md). With --backward, NAME is a
    hand-written backward pass: a function f(Q, K, V, dO[, causal]) returning
    (dQ, dK, dV), or a torch.autograd.Function subclass with its own
    backward. A glob or a folder checks a whole class, one child process per
    submission. Exit status: 0 matches at every
    stage, 1 differs, 2 trouble (bad file, wrong signature, a crash, a
    submission killed at its limit: one line; details with --verbose).
    """
    from tracer import checking
    from tracer.cli import classcheck
    from tracer.compare.check import deadline
    from tracer.compare.check.lessons import SPECS

    if lesson not in SPECS:  # a lesson from a package that describes no check (docs/lessons.md)
        known = ", ".join(n for n in registry.names() if n in SPECS)
        raise InputError(Message("trouble.no_check", lesson=lesson, known=known))
    sizes = {k: v for k, v in (("d_in", d_in), ("d_out", d_out), ("heads", heads)) if v is not None}
    if rope_style is not None and not SPECS[lesson].rotary:
        turned = ", ".join(n for n, s in SPECS.items() if s.rotary)
        raise UserError(f"--rope-style goes with --lesson {turned}")
    from tracer.compare.check.run import spec_for

    checked = spec_for(lesson, **sizes, rope_style=rope_style, backward=backward)  # one line here, not one each
    opts = checking.Options(
        lesson,
        lang,
        fmt,
        verbose,
        deadline.SECONDS if timeout is None else timeout,
        checking.MEMORY_MB if memory is None else memory,
        sizes,
        rope_style,
        backward,
    )
    from tracer import grading

    if points_file is not None and fmt != "gradescope":
        raise UserError("--points goes with --format gradescope")
    stages = [q.stage for q in checked.quantities]
    points = grading.DEFAULT if points_file is None else grading.load(points_file, stages)  # before any submission
    pattern = classcheck.pattern_of(spec)
    if pattern is not None:
        classcheck.run_class(pattern, opts, output, force, jobs or _cores(), points)
        return
    _single(spec, opts, output, force, points)


def _single(spec: str, opts: object, output: str | None, force: bool, points: object) -> None:
    from tracer import checking, classout
    from tracer.compare.check.student import validate
    from tracer.grading import Points
    from tracer.textsafe import printable

    assert isinstance(opts, checking.Options) and isinstance(points, Points)
    validate(spec)  # FILE.py:NAME that names no file: said in the language asked for (group.Command)
    checking.warm(opts.lesson, opts.backward)
    v = checking.check_file(spec, opts)
    if opts.verbose and v.output.strip():
        status(printable(f"--- what your code printed ---\n{v.output.rstrip()}\n---"))
    if v.exit_code == 2:
        if opts.verbose and v.details:
            status(printable(v.details.rstrip()))
        if opts.fmt == "gradescope":  # an autograder wants its results.json even when the code did not run
            write_output(classout.single(v, opts.fmt, points).encode("utf-8", "backslashreplace"), output, force)
        raise UserError(v.message)
    if opts.fmt == "html" and output not in (None, "-") and os.path.isdir(output or ""):
        raise UserError(f"{output} is a folder; give a file name")
    data = classout.single(v, opts.fmt, points).encode("utf-8", "backslashreplace")
    write_output(data, output, force)
    if output not in (None, "-"):
        status(f"wrote {output}")
    if v.exit_code:
        raise SystemExit(v.exit_code)


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
