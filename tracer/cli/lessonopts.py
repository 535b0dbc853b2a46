"""The lessons' own options on the command line, read from each lesson's ``Options`` dataclass.

A lesson documents its options once, as a dataclass (field name, type,
default, and the docstring under the field); this module turns every
installed lesson's fields into click options, so ``--help`` lists them with
what they mean and which lessons take them, and a teacher's lesson gets its
own flags without a line of CLI code.  A field's flag is its name with
dashes (``d_out`` -> ``--d-out``), or ``metadata={"flag": ...}`` when the
lesson wants another (``--rope-style``); ``metadata={"choices": (...)}``
makes it a choice.  A field named like one of the general input options
(:data:`GENERAL`: lesson ``model``'s ``text``, its sentence) gets no flag of
its own: the general flag carries its value to that lesson instead of
embedding the words.  An option the chosen lesson does not take is refused by
the lesson itself (:meth:`~tracer.record.lesson.PackagedLesson.run`), in
one line with exit status 2.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

import click

from tracer.errors import InputError
from tracer.record import registry

GENERAL = {"text": "--text"}
"""Lesson option names that a general input option carries (the lesson then takes ``--text`` as its own)."""


@dataclass(frozen=True)
class Field:
    """One option name as the command line knows it: its flag, type, and what each lesson that takes it says."""

    name: str
    flag: str
    kind: type
    choices: tuple[str, ...]
    said: tuple[tuple[str, object, str], ...]
    """(lesson, default, doc) for each lesson that takes it, in course order."""

    def help(self) -> str:
        """One line per meaning: ``Lesson window: How many keys ... (default 3).``, lessons sharing a doc merged."""
        by_doc: dict[str, list[tuple[str, object]]] = {}
        for lesson, default, doc in self.said:
            by_doc.setdefault(doc, []).append((lesson, default))
        parts = []
        for doc, who in by_doc.items():
            names = ", ".join(n for n, _ in who)
            defaults = sorted({_shown(d) for _, d in who})
            label = "Lesson" if len(who) == 1 else "Lessons"
            parts.append(f"{label} {names}: {doc} (default {' or '.join(defaults)})")
        return " ".join(parts)


def _shown(default: object) -> str:
    return "none" if default is None else str(default)


def docs(options: type) -> dict[str, str]:
    """Field -> the first paragraph of the docstring written under it in the dataclass's source (``""`` if none)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(options)))
    except (OSError, TypeError, SyntaxError):  # no source at hand (a frozen or generated class)
        return {}
    out: dict[str, str] = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for before, after in itertools.pairwise(body):
        if (
            isinstance(before, ast.AnnAssign)
            and isinstance(before.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            first = inspect.cleandoc(after.value.value).split("\n\n")[0]
            out[before.target.id] = " ".join(first.split()).replace("``", "")
    return out


def _kind(options: type, field: dataclasses.Field[Any]) -> type:
    """The field's type for click: ``int``, ``float`` or ``str`` (``int | None`` is ``int``)."""
    hint = typing.get_type_hints(options).get(field.name, str)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = args[0] if args else hint
    return base if base in (int, float, str) else str


def _flag(field: dataclasses.Field[Any]) -> str:
    if field.name in GENERAL:
        return GENERAL[field.name]
    return str(field.metadata.get("flag", "--" + field.name.replace("_", "-")))


def _choices(field: dataclasses.Field[Any]) -> tuple[str, ...]:
    return tuple(str(c) for c in field.metadata.get("choices", ()))


@cache
def fields() -> tuple[Field, ...]:
    """Every installed lesson's options, one :class:`Field` per name, in the order the lessons list them."""
    found: dict[str, Field] = {}
    for name in registry.names():
        try:
            lesson = registry.get(name)
        except InputError:  # a broken plug-in says so when it is chosen; the other lessons' flags still work
            continue
        if lesson.options is None:
            continue
        said = docs(lesson.options)
        for f in dataclasses.fields(lesson.options):
            default = f.default if f.default is not dataclasses.MISSING else None
            entry = (lesson.name, default, said.get(f.name, ""))
            seen = found.get(f.name)
            if seen is not None:
                found[f.name] = dataclasses.replace(seen, said=(*seen.said, entry))
                continue
            found[f.name] = Field(f.name, _flag(f), _kind(lesson.options, f), _choices(f), (entry,))
    return tuple(found.values())


def flags() -> dict[str, str]:
    """Option name -> its flag (``d_out`` -> ``--d-out``): how an error about an option names it."""
    return {f.name: f.flag for f in fields()}


def click_options() -> list[Any]:
    """The click decorators of every lesson's options (each given as ``None`` when not on the command line)."""
    out = []
    for f in fields():
        if f.name in GENERAL:  # the general option is already there and carries it
            continue
        kind: Any = click.Choice(f.choices) if f.choices else f.kind
        out.append(click.option(f.flag, f.name, type=kind, default=None, help=f.help()))
    return out


def given(options: dict[str, Any]) -> dict[str, Any]:
    """The lesson options in a command's options that were given, taken out of ``options``."""
    names = [f.name for f in fields()]
    return {n: v for n in names if (v := options.pop(n, None)) is not None}


def table(lesson: str) -> list[str]:
    """``attn-trace lessons --options NAME``: one line per option of lesson ``lesson``, flag, type, default, doc."""
    chosen = registry.get(lesson)
    if chosen.options is None:
        return []
    said = docs(chosen.options)
    lines = []
    for f in dataclasses.fields(chosen.options):
        kind = "|".join(_choices(f)) or _kind(chosen.options, f).__name__
        default = f.default if f.default is not dataclasses.MISSING else None
        lines.append(f"{_flag(f)} {kind} (default {_shown(default)}): {said.get(f.name, '')}")
    return lines
