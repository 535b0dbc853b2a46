"""Footnotes: what the page says about the tool, set below the text that speaks of attention.

A paragraph (or a caption) marks a note with ``[^key]`` and carries its text
in :attr:`Para.notes <tracer.present.views.model.Para.notes>`.  :func:`number`
walks a page in reading order and numbers every note once, page-wide: the
marker becomes ``[^n]``, which the renderers draw as a superscript link to
the note (HTML) or as a Markdown footnote reference, and the note joins the
list at the end of its section, with a link back to where it was cited.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tracer.errors import InputError
from tracer.message import Message
from tracer.present.views.model import Block, Figure, Note, Para, Section, Table

MARK = re.compile(r"\[\^([A-Za-z0-9_-]+)\]")
"""A footnote marker, ``[^key]`` before numbering and ``[^3]`` after."""


def keys(text: str) -> list[str]:
    """The footnote markers of ``text``, in order."""
    return MARK.findall(text)


class _Counter:
    """Hands out the page's note numbers and collects one section's notes."""

    def __init__(self) -> None:
        self.n = 0
        self.found: list[Note] = []

    def para(self, p: Para) -> Para:
        if not p.notes:
            if p.math and keys(p.text):
                raise InputError(Message("page.footnote_no_text", key=keys(p.text)[0], text=repr(p.text[:60])))
            return p
        given = dict(p.notes)
        used = keys(p.text)
        for key in sorted(set(given) - set(used)):
            raise InputError(Message("page.footnote_never_marked_text", key=repr(key), text=repr(p.text[:60])))

        def one(m: re.Match[str]) -> str:
            key = m.group(1)
            if key not in given:
                raise InputError(Message("page.footnote_no_text", key=key, text=repr(p.text[:60])))
            self.n += 1
            self.found.append(Note(self.n, given[key]))
            return f"[^{self.n}]"

        return replace(p, text=MARK.sub(one, p.text), notes=())

    def caption(self, c: str | Para) -> str | Para:
        return self.para(c) if isinstance(c, Para) else c

    def block(self, b: Block) -> Block:
        if isinstance(b, Para):
            return self.para(b)
        if isinstance(b, Table):
            return replace(b, caption=self.caption(b.caption), notes=tuple(self.para(p) for p in b.notes))
        if isinstance(b, Figure):
            return replace(b, caption=self.caption(b.caption))
        return b  # equations, formulas, code and folded groups hold no prose


def number(sections: tuple[Section, ...], after: int = 0) -> tuple[Section, ...]:
    """``sections`` with every footnote numbered in reading order and listed at the end of its section.

    ``after`` is how many notes the page already numbered before these sections (they count on from it).
    """
    count = _Counter()
    count.n = after
    out = []
    for s in sections:
        count.found = []
        title = count.caption(s.title)
        blocks = tuple(count.block(b) for b in s.blocks)
        out.append(replace(s, title=title, blocks=blocks, notes=(*s.notes, *count.found)))
    return tuple(out)
