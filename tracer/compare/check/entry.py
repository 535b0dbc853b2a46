"""One entry of the diagnosis catalogue: a mistake's code, the stages where it shows, and its test.

Its sentence is the message ``diagnosis.<code>`` of the message tables
(``templates/locale/messages.<lang>.toml``), filled from the hit's details.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tracer.compare.check.context import Context, Hit
from tracer.message import Arg, Message


@dataclass(frozen=True)
class Entry:
    """One mistake: its code, the stages where it shows first, and its test."""

    code: str
    stages: tuple[str, ...]
    test: Callable[[Context], Hit | None]

    @property
    def key(self) -> str:
        """The key of its sentence in the message tables."""
        return f"diagnosis.{self.code}"

    def said(self, detail: Mapping[str, Arg]) -> Message:
        """The explanation as a message, with the hit's details as its arguments."""
        return said(self.code, detail)


def said(code: str, detail: Mapping[str, Arg]) -> Message:
    """Mistake ``code``'s sentence as a message (any lesson's), the hit's details as its arguments."""
    return Message(f"diagnosis.{code}", **detail)
