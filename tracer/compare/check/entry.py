"""One entry of the diagnosis catalogue: a mistake's code, the stages where it shows, its sentences and its test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tracer.compare.check.context import Context, Hit


@dataclass(frozen=True)
class Entry:
    """One mistake: its code, the stages where it shows first, its sentences, and its test."""

    code: str
    stages: tuple[str, ...]
    en: str
    zh: str
    test: Callable[[Context], Hit | None]

    def sentence(self, lang: str, detail: dict[str, str]) -> str:
        """The explanation in ``lang``, with the hit's details filled in."""
        return (self.zh if lang == "zh" else self.en).format(**detail)
