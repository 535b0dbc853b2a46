"""The click group every command registers on, its error handling, and the output helpers they share.

Exit codes: 0 ok, 1 differences found (``diff``, ``verify``, ``check``), 2
bad usage or bad input, reported in one line with no traceback, 3 a crash
of attn-trace itself (:class:`Crash`), 130 interrupted (Ctrl-C).  Results go
to stdout or ``-o``; status lines go to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

import tracer
from tracer.core.files import quoted
from tracer.core.fmt import COLUMNS, printable
from tracer.errors import InputError, TracerError
from tracer.message import Message


class UserError(click.ClickException):
    """Bad input or usage: one line on stderr, exit code 2.

    The message is :func:`~tracer.core.fmt.printable`: a file name or a value
    from a file with a newline or an escape sequence in it stays one inert line.
    A :class:`~tracer.message.Message` is said in the language of the running
    command's ``--lang`` (English before its options are read).
    """

    exit_code = 2

    def __init__(self, message: str | Message) -> None:
        if isinstance(message, Message):
            from tracer.present.messages import render

            ctx = click.get_current_context(silent=True)
            message = render(message, reader_lang(ctx) if ctx is not None else "en")
        super().__init__(printable(message))


class Crash(click.ClickException):
    """An exception attn-trace did not expect (a bug, or memory running out): one line on stderr, exit code 3.

    The last line of defence.  Exit 1 means "differences found" to ``diff``,
    ``verify`` and ``check``, so a grading script that saw a traceback's exit
    1 would read a crash as "the student is wrong"; exit 3 reads as neither
    a verdict nor bad input.
    """

    exit_code = 3

    def __init__(self, e: BaseException) -> None:
        what = "out of memory" if isinstance(e, MemoryError) else printable(f"{type(e).__name__}: {e}")[:300]
        hint = "please report it (ATTN_TRACE_TRACEBACK=1 shows the traceback)"
        super().__init__(f"internal error, not a verdict ({what}); {hint}")


class Interrupted(click.ClickException):
    """Ctrl-C: exit 130, as a shell reports a command ended by SIGINT (click alone would exit 1)."""

    exit_code = 130

    def __init__(self) -> None:
        super().__init__("interrupted")


def _parsed(parse: Callable[[], list[str]], ctx: click.Context) -> list[str]:
    """``parse()``, with a bad option or argument reported in one line (:func:`_one_line`)."""
    try:
        return parse()
    except click.exceptions.NoArgsIsHelpError:
        raise  # bare `attn-trace`: the help, as click prints it
    except click.UsageError as e:
        raise _one_line(e, ctx) from None


class Command(click.Command):
    """A command whose bad options or arguments are reported in one line, and its errors in the reader's language."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return _parsed(lambda: super(Command, self).parse_args(ctx, args), ctx)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; an error that carries a message is said in the language of its ``--lang``."""
        try:
            return super().invoke(ctx)
        except TracerError as e:
            if e.said is None:
                raise  # words already (the group makes them one line)
            from tracer.present.messages import render

            lang = reader_lang(ctx)
            flag = _flag_of(e)
            if flag and isinstance(e, InputError) and e.problem_said is not None:
                raise UserError(Message("inputs.arg_problem", arg=flag, problem=e.problem_said)) from None
            raise UserError(render(e.said, lang)) from None


def _flag_of(e: TracerError) -> str | None:
    """The CLI option that carries the library argument an :class:`InputError` names (None: none does)."""
    if not isinstance(e, InputError) or not e.arg:
        return None
    from tracer.cli import lessonopts

    return (OPTION_OF | lessonopts.flags()).get(e.arg)


def reader_lang(ctx: click.Context) -> str:
    """The language a command's reader asked for: its ``--lang`` (the first, of a list), else English."""
    from tracer.present.strings import LANGS

    asked = str(ctx.params.get("lang") or "").split(",")[0].strip()
    return asked if asked in LANGS else LANGS[0]


class App(click.Group):
    """A group that turns the tracer's own errors into one-line exit-2 messages, and anything else into exit 3."""

    command_class = Command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return _parsed(lambda: super(App, self).parse_args(ctx, args), ctx)  # the group's own options

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list with each command's whole first sentence, wrapped rather than cut with "..."."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=1 << 16)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # no such command
            raise _one_line(e, ctx) from None
        except InputError as e:
            flag = _flag_of(e)
            raise UserError(Message("inputs.arg_problem", arg=flag, problem=e.problem) if flag else str(e)) from None
        except TracerError as e:
            raise UserError(str(e)) from None
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit):
            raise
        except KeyboardInterrupt:
            raise Interrupted() from None
        except Exception as e:  # the last line of defence: see Crash
            if os.environ.get("ATTN_TRACE_TRACEBACK"):
                raise  # for a bug report: the traceback as Python prints it (exit 1)
            raise Crash(e) from None


def _one_line(e: click.UsageError, ctx: click.Context) -> UserError:
    """A usage error as one line naming the command, instead of click's usage, hint and error (four lines).

    ``Error: No such option '--lnag'. (see: attn-trace report --help)``: what is wrong and where the
    options are listed, with exit code 2 like any bad usage.
    """
    return UserError(Message("cli.see_help", usage=e.format_message(), command=(e.ctx or ctx).command_path))


OPTION_OF = {
    "text": "--text",
    "dim": "--dim",
    "seed": "--seed",
    "query": "--query",
    "spec": "--pipeline",
    "torch": "--torch",
}
"""The CLI option that carries each library argument named in an :class:`~tracer.errors.InputError`
(the lessons' own options add theirs: :func:`tracer.cli.lessonopts.flags`)."""


@click.group(cls=App, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": COLUMNS})
@click.version_option(tracer.__version__, "--version", prog_name="attn-trace")
def app() -> None:
    """Trace every intermediate value of an attention computation, and explain it.

    \b
    attn-trace steps --stage scores        the tutorial's score steps
    attn-trace explain "omega[2,1]"        one step, written out as on a board
    attn-trace trace -o trace.json         save the whole trace
    """


def write_output(data: bytes, output: str | None, force: bool) -> None:
    """Write to stdout (no -o, or -o -), or atomically to a file that must not exist unless --force.

    A name ending in ``/`` names a folder, and a symbolic link is refused
    rather than followed or replaced; a character device or a named pipe
    (``-o /dev/null``) is written into, like stdout, with or without
    ``--force`` (see ``docs/security.md``).
    """
    from tracer.core.files import Refused, stream_kind, write_atomic

    if output in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    path = Path(output)
    try:
        if output.endswith(("/", os.sep)) or path.is_dir():
            raise UserError(Message("cli.folder_give_file_name", output=output))
        stream = stream_kind(path)
        if path.exists() and not force and not stream:
            raise UserError(Message("cli.already_exists_use_force", out=quoted(path)))
        write_atomic(path, data)
    except Refused as e:
        raise UserError(str(e)) from None
    except OSError as e:  # a folder we may not look into, a full disk, a read-only file system
        raise UserError(Message("cli.cannot_write", out=quoted(path), error=str(e.strerror or e))) from None


def status(message: str) -> None:
    """A status line on stderr (:func:`~tracer.core.fmt.printable`, like every line of text we print)."""
    click.echo(printable(message), err=True)


def echo(line: str) -> None:
    """One line on stdout, :func:`~tracer.core.fmt.printable`: a newline in a file's name stays ``\\n``."""
    click.echo(printable(line))
