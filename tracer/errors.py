"""Errors the tracer raises on bad input or bad files.

Every error here is the user's to fix, so its message is one line that names
the problem; the CLI prints it and exits with code 2.
"""

from __future__ import annotations

from collections.abc import Iterable

from tracer.message import Message


def unknown(what: str, name: object, choices: Iterable[str]) -> Message:
    """The one wording of a name that is none of its choices, whichever command or function met it.

    ``unknown lesson 'foo': choose from simple, trainable, ...``: ``report``,
    ``check``, ``explain`` and :func:`tracer.trace_lesson` all say this, so
    the same mistake never reads as two different ones.  A lesson and a
    language are named in the reader's language; any other ``what`` (an
    option's own name) is said as it is.
    """
    said = {"name": repr(name), "choices": ", ".join(choices)}
    if what == "lesson":
        return Message("choice.unknown_lesson", **said)
    if what == "language":
        return Message("choice.unknown_language", **said)
    return Message("choice.unknown", what=what, **said)


def message_of(error: BaseException) -> str | Message:
    """What ``error`` says, as the message it carries when it has one, else as its English words.

    An error that wraps another (``--grad-output g.json: inputs are empty``)
    passes this as an argument of its own message, so the inner sentence is
    said in the reader's language too, not frozen in English.
    """
    found = getattr(error, "said", None)
    return found if isinstance(found, Message) else str(error)


class TracerError(Exception):
    """Base class: a problem with what the user gave us, not a bug.

    It may carry a :class:`~tracer.message.Message` instead of words
    (``said``): ``str(error)`` is then the English sentence, and an edge
    that speaks the user's language renders ``said`` in it.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        first = args[0] if args else None
        self.said: Message | None = first if isinstance(first, Message) else None

    def __str__(self) -> str:
        """The message in English."""
        return str(self.said) if self.said is not None and len(self.args) == 1 else super().__str__()


class InputError(TracerError, ValueError):
    """Embeddings, tokens or options that cannot be traced.

    When one argument is at fault, ``arg`` names it as the Python API calls it
    and ``problem`` says what is wrong with it: the message reads
    ``"dim must be at least 1"``.  The CLI puts its own option name in front
    instead (``--dim must be at least 1``), so neither kind of user reads the
    other's vocabulary.

    A :class:`~tracer.message.Message` as ``message`` is kept as ``problem_said``
    too, so the CLI can say the problem in the reader's language after its flag.
    """

    def __init__(self, message: str | Message, *, arg: str | None = None) -> None:
        whole = Message("inputs.arg_problem", arg=arg, problem=message) if arg else message
        super().__init__(whole)
        self.problem_said = message if isinstance(message, Message) else None
        self.said = whole if isinstance(whole, Message) and isinstance(message, Message) else None  # words stay words
        self.arg = arg
        self.problem = str(message)


class TraceFormatError(TracerError, ValueError):
    """A trace file that is missing, malformed, truncated, tampered or of an unknown version."""


class StepNotFound(TracerError, KeyError):
    """An id that names no step of this trace."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "step not found"


class InputNote(UserWarning):
    """Something about the inputs worth saying that is not an error (a bfloat16 tensor converted to float64).

    Raised as a warning; the CLI prints it as a ``note:`` line on stderr.
    """
