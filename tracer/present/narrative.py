"""A lesson's narrative: the prose that walks a reader through its stages.

Renderers (reports, notebooks) work from a trace's stages and steps; what a
lesson adds is its *narrative*, one file per lesson and language, for a
built-in lesson ``tracer/lessons/<lesson>/narrative.<lang>.toml`` (read through
the lesson's :meth:`~tracer.record.lesson.Lesson.narrative`)::

    title = "Self-attention with trainable weights"
    summary = "One paragraph: what the lesson shows."

    [stages.projections]
    title = "Queries, keys and values"
    text = '''Markdown prose; math as $...$ or $$...$$ on their own lines.'''

Every stage the lesson records has a ``[stages.<name>]`` table with ``title``
and ``text`` (paragraphs separated by blank lines; a paragraph that is one
``$$...$$`` is a display formula).  Optional lists choose what the generic
stage report (:mod:`tracer.present.views.lesson`) features, by node name:

* ``show``: nodes shown as tables (default: the stage's nodes that are not
  parts of a sum, ``.p``/``.s``/``.t``);
* ``write``: nodes whose focus-query entries are written out term by term;
* ``heatmap``: (…, i, j) nodes drawn as heatmaps (one per head);
* ``bars``: sums with terms (``z``) drawn as stacked contributions.

A stage's ``proof`` key holds a derivation (how a rounding bound is made
up): the page folds it under a summary line, a notebook prints it after the
text.  A stage table may hold more string keys (``note``, ``why`` …), and a
``[stages.<name>.notes]`` table of footnotes: a paragraph cites one with a
``[^key]`` marker, and the page numbers it and sets it at the end of the
section (what a sentence would say about the tool rather than about
attention, a library kernel or the test suite, goes there).

What a reader sees under a table or a figure is written here too, never
made from node names: an optional ``[nodes."<name>"]`` table per node holds

* ``caption``: the caption of the node's tables (Markdown with ``$...$``);
* ``figure``: the caption of its heatmap or contributions figure;
* ``alt``: what that figure shows, in plain words for a screen reader (no
  ``$...$``; "the causal attention weights"): the page adds the layout and
  what stands out;
* ``formula``: LaTeX that replaces the recorded formula when an entry is
  written out, with the trace's ``<i,j>`` index placeholders (so the
  symbols match the numbers put into them);
* ``row``: the 1-based query row whose entries are written out, instead of
  the focus query's (a row where the step visibly does something).

The files of every language have the same keys, and the same ``formula``,
``row`` and node lists (a test checks).  A teacher's own pipeline supplies the same structure
as a dict (:func:`from_dict`), so it gets reports and notebooks with no
change to the renderers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tracer.errors import InputError, unknown
from tracer.message import Message
from tracer.present.strings import LANGS, flatten
from tracer.record import registry


@dataclass(frozen=True)
class Stage:
    """The prose of one stage."""

    title: str
    text: str
    extra: dict[str, str] = field(default_factory=dict)
    show: tuple[str, ...] | None = None  # None: the stage's own nodes
    write: tuple[str, ...] = ()
    heatmap: tuple[str, ...] = ()
    bars: tuple[str, ...] = ()
    notes: dict[str, str] = field(default_factory=dict)  # footnotes: key -> text, cited as [^key]

    @property
    def proof(self) -> str:
        """The stage's ``proof`` key: a derivation (a rounding bound's) the page folds away, or empty."""
        return self.extra.get("proof", "")

    def lists(self) -> dict[str, list[str]]:
        """The node-selection lists that are set, as TOML would hold them."""
        out = {k: list(getattr(self, k)) for k in SELECT if getattr(self, k)}
        if self.show is not None:
            out["show"] = list(self.show)
        return out


SELECT = ("write", "heatmap", "bars")
"""Optional node lists of a stage table besides ``show``."""


@dataclass(frozen=True)
class NodeText:
    """What the page says about one node: its table caption, its figure caption, how it is written out."""

    caption: str = ""
    figure: str = ""
    alt: str = ""
    formula: str = ""
    row: int = 0  # 0: the focus query

    def to_dict(self) -> dict[str, Any]:
        """The TOML table back, without the keys left empty."""
        out: dict[str, Any] = {k: getattr(self, k) for k in ("caption", "figure", "alt") if getattr(self, k)}
        if self.formula:
            out["formula"] = self.formula
        if self.row:
            out["row"] = self.row
        return out


NODE_KEYS = ("caption", "figure", "alt", "formula", "row")
"""The keys a ``[nodes."<name>"]`` table may hold."""


@dataclass(frozen=True)
class Narrative:
    """A lesson's title, summary and per-stage prose, in one language."""

    lesson: str
    lang: str
    title: str
    summary: str
    stages: dict[str, Stage]
    nodes: dict[str, NodeText] = field(default_factory=dict)
    filled: bool = False  # its placeholders hold a trace's values (:func:`tracer.present.facts.fill`)

    def node(self, name: str) -> NodeText:
        """What the narrative says about node ``name`` (empty when it says nothing)."""
        return self.nodes.get(name, NodeText())

    def stage(self, name: str) -> Stage:
        """The prose of stage ``name`` (a clear error if the narrative lacks it)."""
        try:
            return self.stages[name]
        except KeyError:
            raise InputError(
                Message("narrative.narrative_no_stage", lang=repr(self.lang), lesson=repr(self.lesson), name=repr(name))
            ) from None

    def keys(self) -> set[str]:
        """Every key, flattened (``stages.scores.title``): equal across languages."""
        return set(flatten(self.to_dict()))

    def to_dict(self) -> dict[str, Any]:
        """The TOML structure back (used for key checks and by custom pipelines)."""
        out: dict[str, Any] = {
            "title": self.title,
            "summary": self.summary,
            "stages": {
                n: {"title": s.title, "text": s.text, **s.extra, **s.lists(), **({"notes": s.notes} if s.notes else {})}
                for n, s in self.stages.items()
            },
        }
        if self.nodes:
            out["nodes"] = {n: t.to_dict() for n, t in self.nodes.items()}
        return out


def available(lesson: str) -> bool:
    """Whether ``lesson`` is a registered lesson with a narrative in every language."""
    if lesson not in registry.names():
        return False
    found = registry.get(lesson)
    return all(found.narrative(lang) is not None for lang in LANGS)


def load(lesson: str, lang: str) -> Narrative:
    """The narrative of the registered lesson ``lesson`` in ``lang``.

    A lesson name may come from a trace file (``meta.lesson``): it is looked up
    among the registered lessons, never joined into a path.
    """
    if lang not in LANGS:
        raise InputError(unknown("language", lang, LANGS))
    known = registry.names()
    if lesson not in known:
        raise InputError(
            Message("narrative.unknown_lesson_lessons_narratives", lesson=repr(lesson), known=", ".join(known))
        )
    data = registry.get(lesson).narrative(lang)
    if data is None:
        raise InputError(Message("narrative.lesson_no_narrative_yet", lesson=repr(lesson), lang=repr(lang)))
    return from_dict(data, lesson, lang)


def from_dict(data: dict[str, Any], lesson: str, lang: str) -> Narrative:
    """A narrative from its dict form; missing title, summary or stage text is an error."""
    try:
        stages = {name: _stage(table) for name, table in data["stages"].items()}
        nodes = {str(name): _node(name, table) for name, table in data.get("nodes", {}).items()}
        return Narrative(lesson, lang, str(data["title"]), str(data["summary"]), stages, nodes)
    except (KeyError, TypeError, AttributeError) as e:
        raise InputError(
            Message("narrative.narrative_incomplete_missing", lang=repr(lang), lesson=repr(lesson), error=str(e))
        ) from None
    except ValueError as e:
        raise InputError(Message("narrative.narrative", lang=repr(lang), lesson=repr(lesson), error=str(e))) from None


def _names(table: dict[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of node names")
    return tuple(value)


def _stage(table: dict[str, Any]) -> Stage:
    lists = ("show", *SELECT)
    extra = {k: str(v) for k, v in table.items() if k not in ("title", "text", "notes", *lists)}
    show = _names(table, "show") if "show" in table else None
    picks = {k: _names(table, k) for k in SELECT}
    notes = table.get("notes", {})
    if not isinstance(notes, dict) or not all(isinstance(v, str) for v in notes.values()):
        raise ValueError("notes must be a table of footnote texts")
    said = {str(k): v for k, v in notes.items()}
    return Stage(str(table["title"]), str(table["text"]), extra, show, **picks, notes=said)


def _node(name: str, table: dict[str, Any]) -> NodeText:
    if not isinstance(table, dict):
        raise ValueError(f"nodes.{name} must be a table")
    unknown = sorted(set(table) - set(NODE_KEYS))
    if unknown:
        raise ValueError(f"nodes.{name} has unknown keys {', '.join(unknown)} (allowed: {', '.join(NODE_KEYS)})")
    row = table.get("row", 0)
    if isinstance(row, bool) or not isinstance(row, int) or row < 0:
        raise ValueError(f"nodes.{name}.row must be a positive row number")
    texts = {k: table.get(k, "") for k in ("caption", "figure", "alt", "formula")}
    for k, v in texts.items():
        if not isinstance(v, str):
            raise ValueError(f"nodes.{name}.{k} must be text")
    return NodeText(row=row, **texts)


_MARK = re.compile(r"\[\^([A-Za-z0-9_-]+)\]")


def footnoted(stage: Stage) -> str:
    """A stage's text for a notebook's Markdown cell: footnote markers as superscript numbers, the notes below.

    Notebook viewers (Jupyter, VS Code) read no Markdown footnotes, so the
    notes are numbered within the cell and listed under a rule.
    """
    order: list[str] = []

    def one(m: re.Match[str]) -> str:
        if m.group(1) not in order:
            order.append(m.group(1))
        return f"<sup>{order.index(m.group(1)) + 1}</sup>"

    text = _MARK.sub(one, stage.text.rstrip() + f"\n\n{stage.proof.strip()}\n" if stage.proof else stage.text)
    notes = [f"<sup>{n}</sup> {' '.join(stage.notes[k].split())}" for n, k in enumerate(order, 1) if k in stage.notes]
    return text if not notes else text.rstrip() + "\n\n---\n\n" + "\n\n".join(notes) + "\n"
