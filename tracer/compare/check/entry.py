"""One entry of the diagnosis catalogue: a mistake's code, the stages where it shows, and its test.

Its sentence is the message ``diagnosis.<code>`` of the message tables
(``templates/locale/messages.<lang>.toml``), filled from the hit's details.
A mistake a lesson describes itself (its check description's ``mistakes``)
is said by the lesson's own table: the key ``lesson.<name>.diagnosis.<code>``
(:mod:`tracer.present.messages`).
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
    lesson: str = ""
    """The lesson whose own table says it (set by the lesson's check description); empty: the package's table."""

    @property
    def key(self) -> str:
        """The key of its sentence in the message tables."""
        return f"lesson.{self.lesson}.diagnosis.{self.code}" if self.lesson else f"diagnosis.{self.code}"

    def said(self, detail: Mapping[str, Arg]) -> Message:
        """The explanation as a message, with the hit's details as its arguments."""
        return Message(self.key, **detail)
