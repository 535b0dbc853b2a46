"""A message as data: a key into the string tables and the arguments its sentence is filled with.

Every layer can say something to the user without knowing the user's
language: it returns or raises a :class:`Message` (``Message("trouble.raised",
who="Attention", error="ValueError: no")``), and the edge that prints it
(the CLI, a page, the class summary) turns it into words with
:func:`tracer.present.messages.render`, from ``templates/locale/messages.<lang>.toml``.
A sentence is never parsed back: a translation reads the key, not the
English, so changing the English cannot lose it.

An argument is a string, a number, or another message (a sentence inside a
sentence: ``head 2 (heads.1): …`` holds the message about that head).  The
student's own words (an exception's text, a parameter's name) are arguments
and stay as they were, in every language; a renderer escapes them for its
format.  A message is immutable and crosses the sandbox's pipe as JSON
(:meth:`Message.to_json`, :meth:`Message.from_json`, which treats what it
reads as untrusted data).

This module sits in the lowest layer (beside :mod:`tracer.errors`), so it
cannot import the renderer: ``str(message)`` is English through the one
renderer the package's top registers with :func:`install`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Union

Arg = Union[str, int, float, "Message"]
"""What a message's argument may be."""

KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.")
DEPTH = 8
"""How deeply messages may nest in a message read from JSON (ours nest two deep)."""


class Message:
    """A key of the string tables and its named arguments; equal when both are equal."""

    __slots__ = ("args", "key")
    key: str
    args: Mapping[str, Arg]

    def __init__(self, key: str, /, **args: Arg) -> None:
        """``Message("trouble.no_file", file="attn.py")``: the key first, then the sentence's named fields."""
        if not key or not set(key) <= KEY_CHARS:
            raise ValueError(f"a message key is lower-case words joined by dots, not {key!r}")
        for name, value in args.items():
            if isinstance(value, bool) or not isinstance(value, (str, int, float, Message)):
                raise TypeError(f"argument {name!r} of message {key!r} is a {type(value).__name__}")
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "args", MappingProxyType(dict(args)))

    def __setattr__(self, name: str, value: Any) -> None:
        """Messages are immutable."""
        raise AttributeError(f"a Message is immutable; {name} cannot be set")

    def __eq__(self, other: object) -> bool:
        """Same key, same arguments."""
        return isinstance(other, Message) and (self.key, dict(self.args)) == (other.key, dict(other.args))

    def __hash__(self) -> int:
        """From the key and the arguments (nested messages included)."""
        return hash((self.key, tuple(sorted(self.args.items()))))

    def __repr__(self) -> str:
        """``Message('trouble.no_file', file='attn.py')``."""
        said = "".join(f", {k}={v!r}" for k, v in self.args.items())
        return f"Message({self.key!r}{said})"

    def __str__(self) -> str:
        """The message in English (what logs, ``str(exception)`` and existing callers read)."""
        return render(self, "en")

    def replace(self, old: str, new: str) -> Message:
        """This message with ``old`` replaced by ``new`` in every string argument (a path as the user gave it)."""
        return Message(self.key, **{k: _replaced(v, old, new) for k, v in self.args.items()})

    def to_json(self) -> dict[str, Any]:
        """``{"key": …, "args": {…}}``, nested messages as the same form."""
        return {
            "key": self.key,
            "args": {k: v.to_json() if isinstance(v, Message) else v for k, v in self.args.items()},
        }

    @classmethod
    def from_json(cls, data: Any, depth: int = DEPTH) -> Message:
        """The message :meth:`to_json` wrote; a ValueError for anything else (the data may come from anywhere)."""
        if not isinstance(data, dict) or set(data) != {"key", "args"} or not isinstance(data["key"], str):
            raise ValueError("a message is an object with a key and its args")
        args = data["args"]
        if not isinstance(args, dict) or depth <= 0:
            raise ValueError(f"message {data['key']!r} has malformed args")
        out: dict[str, Arg] = {}
        for name, value in args.items():
            if isinstance(value, dict):
                out[str(name)] = cls.from_json(value, depth - 1)
            elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
                out[str(name)] = value
            else:
                raise ValueError(f"argument {name!r} of message {data['key']!r} is not text, a number or a message")
        try:
            return cls(data["key"], **out)
        except (TypeError, ValueError) as e:
            raise ValueError(str(e)) from None


def _replaced(value: Arg, old: str, new: str) -> Arg:
    if isinstance(value, Message):
        return value.replace(old, new)
    return value.replace(old, new) if isinstance(value, str) else value


Renderer = Callable[[Message, str], str]
_RENDERER: list[Renderer] = []


def install(renderer: Renderer) -> None:
    """Register the function that writes a message in a language (the package's top does, at import)."""
    _RENDERER[:] = [renderer]


def render(message: Message, lang: str = "en") -> str:
    """``message`` in ``lang`` through the registered renderer (its key and arguments when none is)."""
    if not _RENDERER:
        return message.key + "".join(f" {k}={v}" for k, v in message.args.items())
    return _RENDERER[0](message, lang)


def text(said: str | Message, lang: str = "en") -> str:
    """What a message or a plain string says in ``lang`` (a plain string is already words)."""
    return render(said, lang) if isinstance(said, Message) else said


def shortened(message: Message, name: str, most: int) -> Message:
    """``message`` with its string argument ``name`` cut at the end so that its English is at most ``most`` long.

    A value read from a file can be any length; an error quoting it stays one
    readable line.  The English is the yardstick (so it reads as it always
    has); another language's sentence holds the same cut value.
    """
    value = message.args[name]
    over = len(str(message)) - most
    if over <= 0 or not isinstance(value, str):
        return message
    return Message(message.key, **{**message.args, name: value[: max(0, len(value) - over)]})
