"""A whole class checked at once: ``attn-trace check 'submissions/*.py:CausalAttention' --lesson causal``.

The part before ``:NAME`` is a glob or a folder; each ``.py`` file it names
is one student's submission.  Torch and the check are imported once, in
this process; every submission is then checked in a child of the sandbox's launcher
(:mod:`tracer.sandbox`), ``jobs`` at a time, each with the time and memory
limit, so a submission that hangs, allocates without bound, exits, forks or
crashes the interpreter is reported as such and the others go on.

Output: one line per student then a summary (text), one JSON or CSV file,
Gradescope results for every student, or (``--format html -o DIR``) an
index page linking one page per student.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from tracer import checking, classout
from tracer.checking import Options, Verdict
from tracer.cli.group import UserError, status, write_output
from tracer.core.files import quoted
from tracer.core.fmt import printable
from tracer.grading import DEFAULT, Points

GLOB = re.compile(r"[*?\[]")
PAGE = re.compile(r"[0-9]{3,}-[A-Za-z0-9_.-]+\.html")


def pattern_of(spec: str) -> tuple[str, str] | None:
    """``(files, NAME)`` when ``spec`` names a class (a glob or a folder before ``:NAME``), else None."""
    where, sep, name = spec.rpartition(":")
    if not sep or not name:
        return None
    if GLOB.search(where) or os.path.isdir(where):
        return where, name
    return None


def submissions(where: str) -> list[Path]:
    """The ``.py`` files of a folder (not its subfolders) or of a glob, sorted."""
    if os.path.isdir(where) and not GLOB.search(where):
        files = sorted(p for p in Path(where).iterdir() if p.suffix == ".py" and p.is_file())
    else:
        files = sorted(Path(p) for p in glob.glob(where, recursive=True) if p.endswith(".py") and Path(p).is_file())
    if not files:
        raise UserError(f"no .py files match {quoted(where)}")
    return files


def labels(files: list[Path]) -> list[str]:
    """Each file named as briefly as keeps the names apart (its name, or its path from the common folder).

    A name is the student's data: a newline or a control character in it is
    written as its escape (``\\n``), and a byte that is not UTF-8 (kept by
    Python as a lone surrogate) as ``\\udcff``, in every format.
    """
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        root = os.path.commonpath([str(f.absolute().parent) for f in files])
        names = [os.path.relpath(f.absolute(), root) for f in files]
    return [printable(n) for n in names]


def outside(files: list[Path], where: str) -> dict[Path, str]:
    """The files that are links leaving the class folder, each with its trouble line (they are never run).

    Git clones and unzip keep links, so ``mallory.py -> ../teacher/solution.py``
    would otherwise grade the teacher's code as Mallory's.  The class folder
    is the folder given, or the part of the glob before its first wildcard.
    """
    parts = Path(where).parts
    plain = next((n for n, part in enumerate(parts) if GLOB.search(part)), len(parts))
    root = Path(*parts[:plain]).resolve() if plain else Path.cwd().resolve()
    refused = {}
    for f in files:
        real = f.resolve()
        if real != root and root not in real.parents:
            refused[f] = "is a symbolic link that leaves the class folder; it was not followed"
    return refused


def run_class(
    pattern: tuple[str, str], opts: Options, output: str | None, force: bool, jobs: int, points: Points = DEFAULT
) -> None:
    """Check every submission, write the chosen format, exit 0 when all match and 1 otherwise."""
    from tracer import sandbox

    where, name = pattern
    files = submissions(where)
    names = labels(files)
    if opts.fmt == "html" and output in (None, "-"):
        raise UserError("--format html for a class writes a folder: give -o DIR")
    if opts.fmt == "html":
        _check_folder(Path(str(output)), force)
    checking.warm(opts.lesson, opts.backward)
    refused = outside(files, where)
    verdicts: list[Verdict | None] = [None] * len(files)
    progress = opts.fmt != "text" or output not in (None, "-")  # each student's line on stderr as it comes

    def got(index: int, verdict: Verdict) -> None:
        verdicts[index] = verdict
        if progress:
            status(classout.line(verdict, names[index], opts.lang))

    for n, f in enumerate(files):
        if f in refused:
            got(n, Verdict(f"{names[n]}:{name}", "trouble", f"{names[n]} {refused[f]}"))
    run = [n for n, v in enumerate(verdicts) if v is None]
    specs = [f"{files[n].resolve()}:{name}" for n in run]
    jobs_ = [checking.task(s, opts) for s in specs]
    for k, out in sandbox.pool(jobs_, jobs, opts.timeout, opts.memory):
        got(run[k], checking.from_outcome(f"{files[run[k]]}:{name}", out, specs[k], opts))
    done = [(names[n], v) for n, v in enumerate(verdicts) if v is not None]
    if opts.fmt == "html":
        _write_html(Path(str(output)), opts.lesson, done, force, opts.lang)
        _summary(done, opts.lang)
        status(f"wrote {output}")
    else:
        data = {
            "text": lambda: classout.class_text(done, opts.lang),
            "json": lambda: classout.class_json(opts.lesson, done),
            "csv": lambda: classout.table([v for _, v in done], [n for n, _ in done]),
            "gradescope": lambda: classout.class_gradescope(done, points),
        }[opts.fmt]()
        write_output(data.encode("utf-8", "backslashreplace"), output, force)
        if output not in (None, "-"):
            _summary(done, opts.lang)
            status(f"wrote {output}")
    if any(v.status != "match" for _, v in done):
        raise SystemExit(1)


def _summary(done: list[tuple[str, Verdict]], lang: str) -> None:
    """The class summary on stderr, one status line per line of it."""
    for text in classout.summary_text(done, lang).splitlines():
        status(text)


def _check_folder(out: Path, force: bool) -> None:
    if out.is_symlink():
        raise UserError(f"{quoted(out)} is a symbolic link; give a folder")
    if out.exists() and not out.is_dir():
        raise UserError(f"{quoted(out)} is a file; give a folder for the class's pages")
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{quoted(out)} already exists; use --force to overwrite it")


def page_name(n: int, label: str) -> str:
    """A student's page file: a number (names can collide) and the file name reduced to safe characters."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(label).stem)[:60] or "student"
    return f"{n:03d}-{stem}.html"


def _write_html(out: Path, lesson: str, done: list[tuple[str, Verdict]], force: bool, lang: str = "en") -> None:
    from tracer.core.files import write_folder
    from tracer.present import classpage
    from tracer.present.strings import Strings

    s = Strings(lang)
    files: dict[str, bytes] = {}
    rows = []
    for n, (label, v) in enumerate(done, 1):
        page = page_name(n, label)
        files[page] = (v.page or _trouble_page(label, v, lang)).encode("utf-8", "backslashreplace")
        said = classout.line(v, label, lang).partition(": ")[2]
        rows.append(classpage.Row(page, label, v.status.replace(" ", "-"), said))
    summary = classout.summary_text(done, lang).rstrip("\n").split("\n")
    page = classpage.index(s("class.title", lesson=lesson), summary, rows, lang)
    files["index.html"] = page.encode("utf-8", "backslashreplace")
    try:
        write_folder(out, files, force, lambda f: f == "index.html" or bool(PAGE.fullmatch(f)))
    except OSError as e:
        raise UserError(f"cannot write {quoted(out)}: {e}") from None


def _trouble_page(label: str, v: Verdict, lang: str = "en") -> str:
    from tracer.present import classpage
    from tracer.present.strings import Strings
    from tracer.textsafe import printable as lines  # the student's output keeps its lines

    s = Strings(lang)
    word = s(f"class.status_{v.status.replace(' ', '_')}")
    output = lines(v.output) if v.output.strip() else ""
    return classpage.trouble(label, s("class.said", status=word, message=v.message), s("class.output"), output, lang)
