"""Messages (:class:`tracer.message.Message`) written out in the reader's language.

The sentences live in ``templates/locale/messages.<lang>.toml``, one table per
language with the same keys, each a :meth:`str.format` template whose named
fields are the message's arguments (``"{file} defines no {name}"``; a number
may carry its format, ``{err:.3g}``).  An argument that is itself a message
is rendered first, in the same language.

Escaping belongs to the format that prints: ``escape`` is applied to every
string argument (the student's names and exception texts), never to the
table's own words, so an HTML page passes :func:`html.escape` and the
terminal passes :func:`~tracer.core.fmt.printable`.  A key the table lacks
is a :class:`~tracer.present.strings.MissingString`, never a blank.
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Callable, Iterator
from functools import cache

from tracer.message import Arg, Message
from tracer.present.strings import LANGS, MissingString, flatten, templates_dir


@cache
def table(lang: str) -> dict[str, str]:
    """The flattened message table of ``lang``."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}: choose from {', '.join(LANGS)}")
    with (templates_dir() / "locale" / f"messages.{lang}.toml").open("rb") as f:
        return flatten(tomllib.load(f))


def render(message: Message, lang: str = "en", escape: Callable[[str], str] = str) -> str:
    """``message`` in ``lang``: its sentence with the arguments filled in (string arguments through ``escape``)."""
    try:
        template = table(lang)[message.key]
    except KeyError:
        raise MissingString(f"message {message.key!r} is missing from the {lang!r} table") from None
    return template.format_map({k: _arg(v, lang, escape) for k, v in message.args.items()})


def _arg(value: Arg, lang: str, escape: Callable[[str], str]) -> str | int | float:
    if isinstance(value, Message):
        return render(value, lang, escape)
    return escape(value) if isinstance(value, str) else value


def fields(template: str) -> set[str]:
    """The named fields of a table's sentence (``"{a} and {b:.3g}"`` -> ``{"a", "b"}``)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def keys() -> Iterator[str]:
    """Every key of the tables (of English, which a test holds equal to every other language's)."""
    yield from table(LANGS[0])
