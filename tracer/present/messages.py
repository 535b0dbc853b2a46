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

A lesson brings its own sentences (its check's diagnoses): the table
``messages.<lang>.toml`` beside its narratives, read through the registry
(:meth:`tracer.record.lesson.Lesson.messages`).  Its keys are found under
``lesson.<name>.``: lesson ``temperature``'s ``diagnosis.tau_missing`` is
the key ``lesson.temperature.diagnosis.tau_missing``, so a lesson from
another package can neither lose its words nor take a key of ours.
:func:`gaps` is the test every table must pass, a lesson's included.
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Callable, Iterable, Iterator
from functools import cache

from tracer.errors import InputError
from tracer.message import KEY_CHARS, Arg, Message
from tracer.present.strings import LANGS, MissingString, flatten, templates_dir

LESSON = "lesson."
"""The prefix of the keys a lesson's own table holds: ``lesson.<name>.<key>``."""


@cache
def table(lang: str) -> dict[str, str]:
    """The flattened message table of ``lang``."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}: choose from {', '.join(LANGS)}")
    with (templates_dir() / "locale" / f"messages.{lang}.toml").open("rb") as f:
        return flatten(tomllib.load(f))


@cache
def lesson_table(name: str, lang: str) -> dict[str, str]:
    """Lesson ``name``'s own table in ``lang``, flattened, its keys prefixed ``lesson.<name>.`` (empty: none).

    A lesson that is not installed, or has no table in ``lang``, has an
    empty one: its keys are then missing like any other key.
    """
    from tracer.record import registry

    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}: choose from {', '.join(LANGS)}")
    if name not in registry.names():
        return {}
    data = registry.get(name).messages(lang)
    if not data:
        return {}
    if not set(name) <= KEY_CHARS - {"."}:
        raise InputError(Message("narrative.lesson_message_table_so", name=repr(name)))
    return flatten(data, f"{LESSON}{name}.")


def sentence(key: str, lang: str) -> str:
    """The sentence of ``key`` in ``lang``: from the package's table, or from the lesson a ``lesson.`` key names."""
    found = table(lang).get(key)
    if found is None and key.startswith(LESSON):
        found = lesson_table(key[len(LESSON) :].partition(".")[0], lang).get(key)
    if found is None:
        raise MissingString(f"message {key!r} is missing from the {lang!r} table")
    return found


def render(message: Message, lang: str = "en", escape: Callable[[str], str] = str) -> str:
    """``message`` in ``lang``: its sentence with the arguments filled in (string arguments through ``escape``)."""
    template = sentence(message.key, lang)
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


def gaps(name: str, wanted: Iterable[str] = ()) -> list[str]:
    """What is wrong with lesson ``name``'s tables: a key not in each language, fields that differ, a key absent.

    ``wanted`` are the keys the lesson's code says (its mistakes' keys);
    each must be in every language's table.  Empty when all is well: the
    test a built-in table passes (``tests/test_messages.py``) and a
    plug-in's own tests call for its tables.
    """
    tables = {lang: lesson_table(name, lang) for lang in LANGS}
    first = tables[LANGS[0]]
    out = []
    for lang, found in tables.items():
        out += [f"{key} is missing from the {lang!r} table" for key in sorted((set(first) | set(found)) - set(found))]
        out += [
            f"{key} fills {sorted(fields(text))} in {lang!r} but {sorted(fields(first[key]))} in {LANGS[0]!r}"
            for key, text in sorted(found.items())
            if key in first and fields(text) != fields(first[key])
        ]
    out += [
        f"{key} is in no table"
        for key in sorted(set(wanted) - set(first))
        if all(key not in t for t in tables.values())
    ]
    return out
