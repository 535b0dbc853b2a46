"""Many reports in one process: every lesson x language asked for, sharing what one report pays for once.

``attn-trace report --lesson all --lang all`` (or lists: ``--lesson
simple,causal --lang en,zh``) traces each lesson once and renders it in each
language, so the imports (torch, matplotlib, Jinja2), the Jinja environment,
the string tables and the figure set-up are paid for once, not once per
report.  Each report's files are exactly those a run of its own writes
(tested byte for byte).

Nothing is overwritten without ``force``: every report's main files are
checked before the first one is written, and each report's folder is
written whole or not at all (:func:`tracer.core.files.write_folder`).  One
status line per report goes to ``say`` (the CLI's stderr).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tracer.core.files import quoted
from tracer.core.trace import Trace
from tracer.errors import InputError, unknown
from tracer.message import Message

LANGS = ("en", "zh")
MAIN_FILES = ("index.html", "fragment.html", "index.md")
"""Files every report has one of; an existing one means the folder holds a report."""


class BadChoice(InputError):
    """A name in an option's list that is not one of its choices (``option`` and ``detail`` for the CLI)."""

    def __init__(self, option: str, detail: Message) -> None:
        super().__init__(Message("choice.in_option", option=option, detail=detail))
        self.option, self.detail = option, detail


_WHAT = {"--lesson": "lesson", "--lang": "language"}


def choices(value: str, allowed: Sequence[str], option: str) -> list[str]:
    """``all`` or a comma-separated list of ``allowed`` names, in the order given, each once."""
    if value.strip() == "all":
        return list(allowed)
    picked = [v.strip() for v in value.split(",")]
    bad = [v for v in picked if v not in allowed]
    if bad:
        raise BadChoice(option, unknown(_WHAT.get(option, option), bad[0], ["all", *allowed]))
    return list(dict.fromkeys(picked))


@dataclass(frozen=True)
class Job:
    """One report: the trace, its language and the folder its files go into."""

    trace: Trace
    lang: str
    folder: Path


def jobs(traces: Sequence[Trace], langs: Sequence[str], output: Path | None) -> list[Job]:
    """Every trace in every language; folders are ``<root>/<example>/<lang>`` (root ``reports`` or ``output``).

    A single report keeps the old meaning of ``output``: the folder itself.
    """
    from tracer.present.report import slug

    single = len(traces) * len(langs) == 1
    out = []
    for t in traces:
        for lang in langs:
            folder = output if single and output is not None else (output or Path("reports")) / slug(t) / lang
            out.append(Job(t, lang, folder))
    folders = [j.folder for j in out]
    if len(set(folders)) != len(folders):
        raise InputError(Message("report.two_reports_asked_would"))
    return out


class ReportExists(InputError):
    """A report file is already there and ``force`` is off; the CLI adds how to overwrite it (``--force``)."""

    def __init__(self, path: Path) -> None:
        super().__init__(Message("report.exists", file=quoted(path)))
        self.path = path


def _check(folder: Path, force: bool) -> None:
    """Refuse a link, a file where the folder goes, or (without ``force``) an existing report."""
    if folder.is_symlink():
        raise InputError(Message("report.symbolic_link_attn_trace", folder=quoted(folder)))
    if folder.exists() and not folder.is_dir():
        raise InputError(Message("report.exists_not_folder", folder=quoted(folder)))
    if not force:
        for name in MAIN_FILES:
            if (folder / name).exists():
                raise ReportExists(folder / name)


def write_all(
    todo: Sequence[Job],
    formats: tuple[str, ...],
    decimals: int,
    fragment: bool,
    force: bool,
    say: Callable[[str], None],
) -> None:
    """Render and write each job, one status line each; refuse before writing anything if a report exists."""
    from tracer.core.files import write_folder
    from tracer.present import report

    for job in todo:
        try:
            _check(job.folder, force)
        except OSError as e:  # a folder this user may not look into
            raise InputError(
                Message("report.cannot_write_into", folder=str(job.folder), error=str(e.strerror or e))
            ) from None
    for job in todo:
        files = report.build(job.trace, job.lang, formats, decimals, fragment)
        try:
            left = write_folder(job.folder, files, force, report.is_report_file)
        except FileExistsError as e:
            raise ReportExists(Path(e.filename)) from None
        except OSError as e:
            raise InputError(
                Message("report.cannot_write_into", folder=str(job.folder), error=str(e.strerror or e))
            ) from None
        size = sum(len(d) for d in files.values())
        say(f"wrote {job.folder}: {', '.join(files)} ({size:,} bytes)")
        if left:
            say(f"note: {left}")
