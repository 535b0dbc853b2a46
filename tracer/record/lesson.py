"""What a lesson is to the engines: the :class:`Lesson` protocol, and :class:`PackagedLesson` to write one.

A lesson is one idea about attention taught end to end: a pipeline built from
the traced primitives, a narrative per language, optionally the notebook cells
that recompute it in plain torch.  The engines (recording, reports,
notebooks, diffs) never name a lesson: they ask the registry
(:mod:`tracer.record.registry`) for one by the name a user or a trace file
gives, and call what this protocol promises.  The nine built-in lessons live in
``tracer/lessons/<name>/``; a teacher's package declares its own under the
entry point group ``attn_trace.lessons`` (``docs/lessons.md``).

Importing this module imports no torch: a lesson's parts are named by module
path and imported when first used, so that listing lessons stays cheap.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tracer.errors import InputError

if TYPE_CHECKING:
    from tracer.core.trace import Trace
    from tracer.record.inputs import Example

INPUT_OPTIONS = ("inputs", "tokens", "query", "dtype")
"""The options every lesson takes: what is traced (the rest are the lesson's own)."""

BACKWARD_OPTIONS = ("backward", "grad_output")
"""The options that ask for the backward pass: ``backward=True``, and ``grad_output``, the upstream gradient."""

Cells = dict[str, list[str]]
"""Stage -> the sources of its notebook code cells."""


@runtime_checkable
class Lesson(Protocol):
    """What the engines call.  Everything but :meth:`run` may be cheap metadata; :meth:`run` may import torch."""

    @property
    def name(self) -> str:
        """The name users type (``--lesson NAME``) and traces carry (``meta["lesson"]``)."""
        ...

    @property
    def summary(self) -> str:
        """One line for ``attn-trace lessons``."""
        ...

    @property
    def options(self) -> type | None:
        """The lesson's own options as a dataclass (field names, types, defaults, docs), or ``None``."""
        ...

    @property
    def check(self) -> object | None:
        """How ``attn-trace check`` checks a student's code for this lesson, or ``None`` when it cannot.

        A :class:`tracer.compare.check.lessons.Spec` (the check's own layer
        defines it, so it is typed ``object`` here): the constructor a
        student writes, the sizes it is built at, how it is run, and the
        lesson's quantities in order (``docs/lessons.md``).
        """
        ...

    def run(self, example: Example, **options: Any) -> Trace:
        """The lesson's trace of a validated example, with the lesson's own ``options``."""
        ...

    def trace(self, **options: Any) -> Trace:
        """:meth:`run` from raw options: ``inputs``, ``tokens``, ``query``, ``dtype`` and the lesson's own."""
        ...

    def narrative(self, lang: str) -> dict[str, Any] | None:
        """The narrative in ``lang`` in its dict form (``tracer.present.narrative.from_dict``), or ``None``."""
        ...

    def notebook_cells(self, trace: Trace) -> Cells | None:
        """Stage -> plain-torch code cells recomputing ``trace``, or ``None`` when the lesson has none."""
        ...

    def messages(self, lang: str) -> dict[str, Any] | None:
        """The lesson's own message table in ``lang`` (nested sections of sentences), or ``None`` without one.

        The sentences the lesson's own code says (its check's diagnoses:
        ``diagnosis.<code>``), in :meth:`str.format` form; the renderer
        (:mod:`tracer.present.messages`) finds them under the key
        ``lesson.<name>.<key>``, so a lesson outside the package brings
        its words with it and never shares a key with another.
        """
        ...


def trace_with(lesson: Lesson, options: dict[str, Any]) -> Trace:
    """``lesson.run`` on the example the input options in ``options`` describe (the rest go to the lesson)."""
    from tracer.record.inputs import example

    given = {k: options.pop(k) for k in INPUT_OPTIONS if k in options}
    return lesson.run(example(**given), **options)


def option_names(options: type | None) -> tuple[str, ...]:
    """The field names of an options dataclass (none for ``None``)."""
    return tuple(f.name for f in dataclasses.fields(options)) if options is not None else ()


@dataclass(frozen=True)
class PackagedLesson:
    """A lesson whose parts live in a Python package: the form the built-in lessons and the example plug-in take.

    ``pipeline`` names a module with ``build(values, tokens, query, dtype,
    meta, **prepared)`` and, for a lesson with options, ``prepare(values,
    **options) -> prepared`` (weights drawn, options validated).  The module
    may declare its focus rule, ``focus(tokens, prepared) -> query``: the
    query whose row shows the lesson's effect (the last one, for a window),
    used when the user names none (:func:`focus_query`).  ``package``
    holds the narratives as data files ``narrative.<lang>.toml``.
    ``notebook`` names a module with ``cells(trace)``; ``checker`` a module
    whose ``CHECK`` is the lesson's check description (:attr:`check`).  ``options`` is the
    dataclass that documents the lesson's own options and their defaults; an
    option it does not name is refused before anything runs.  ``place`` is
    where the lesson sits in a course: lessons are listed by it, then by
    name (the built-in ones are 1 to 9, in the order the chapter builds
    them up; a plug-in that sets none comes after them).

    The page parts are optional, each ``module:function`` imported when
    used (:func:`page_part`): ``facts`` computes what the narrative's
    placeholders say about the example (:mod:`tracer.present.facts`);
    ``page`` builds the sections and heading of a page of the lesson's own,
    instead of the generic ones its narrative tells, called as the generic
    builder is (``page(trace, narrative, decimals)``) and finished by the
    same one (:func:`tracer.present.views.lesson.assemble`), and ``figures``
    that page's figures for ``attn-trace figures``; ``idea`` draws the picture of the lesson's idea
    that its page shows before the numbers (``idea(trace, strings)`` returns a
    :class:`tracer.present.figures.scene.Picture`); ``order`` is the order its page and notebook
    walk the stages in, when it is not the order they are recorded in.
    ``folder`` prefixes the folder names of its reports (default: its name;
    ``""`` for none, and then its own example's reports are ``tutorial``).
    """

    name: str
    summary: str
    pipeline: str
    package: str
    place: float = math.inf
    notebook: str | None = None
    options: type | None = None
    checker: str | None = None
    facts: str | None = None
    page: str | None = None
    figures: str | None = None
    idea: str | None = None
    order: tuple[str, ...] = ()
    folder: str | None = None

    @cached_property
    def check(self) -> object | None:
        """The ``CHECK`` of the module ``checker`` names, imported on first use (``None`` without one)."""
        return importlib.import_module(self.checker).CHECK if self.checker is not None else None

    @cached_property
    def module(self) -> ModuleType:
        """The pipeline's module, imported on first use (this is where torch comes in)."""
        return importlib.import_module(self.pipeline)

    def run(self, example: Example, **options: Any) -> Trace:
        back = backward_request(self.name, self.module, options)
        unknown = sorted(set(options) - set(option_names(self.options)))
        if unknown:
            raise InputError(f"lesson {self.name!r} takes no option {', '.join(unknown)}")
        values, dt, meta = example.for_pipeline()
        prepare = getattr(self.module, "prepare", None)
        extra = prepare(values, **options) if prepare is not None else {}
        if back is not None:
            extra["backward_pass"] = back
        ruled = focus_query(self.module, len(example.tokens), extra)
        trace: Trace = self.module.build(
            values, example.tokens, example.query if example.chosen else ruled, dt, meta, **extra
        )
        if hasattr(self.module, "focus"):
            trace.meta["default_query"] = ruled  # what the rule picks: a report's folder names only another query
        return trace

    def trace(self, **options: Any) -> Trace:
        return trace_with(self, options)

    def narrative(self, lang: str) -> dict[str, Any] | None:
        return data_file(self.package, "narrative", lang)

    def messages(self, lang: str) -> dict[str, Any] | None:
        return data_file(self.package, "messages", lang)

    def notebook_cells(self, trace: Trace) -> Cells | None:
        if self.notebook is None:
            return None
        cells: Cells = importlib.import_module(self.notebook).cells(trace)
        return cells


PAGE_PARTS = ("facts", "page", "figures", "idea")
"""The optional parts a lesson may name as ``module:function`` (see :class:`PackagedLesson`)."""


def page_part(lesson: Lesson, part: str) -> Callable[..., Any] | None:
    """The function a lesson names for one of its :data:`PAGE_PARTS`, imported; ``None`` when it names none.

    A lesson that is not a :class:`PackagedLesson` (``--pipeline``'s) has
    none of them: its page is the generic one its narrative tells.
    """
    if part not in PAGE_PARTS:
        raise ValueError(f"no page part {part!r}: one of {', '.join(PAGE_PARTS)}")
    spec = getattr(lesson, part, None)
    if not isinstance(spec, str):
        return None
    where, _, func = spec.partition(":")
    fn: Callable[..., Any] | None = getattr(importlib.import_module(where), func, None)
    if not callable(fn):
        raise InputError(f"lesson {lesson.name!r} names {spec} as its {part}, and that is not a function")
    return fn


def backward_request(name: str, module: ModuleType, options: dict[str, Any]) -> Any:
    """Take ``backward`` and ``grad_output`` out of ``options``: the request a pipeline's ``build`` is given.

    ``None`` when no backward pass is asked for.  A ``grad_output`` (an
    array-like: nested lists, numpy, torch) asks for one too, and is checked
    to be a finite array of numbers here; its shape is checked against the output's
    by the lesson.  A lesson whose ``build`` takes no ``backward_pass``
    has no backward pass, which is said in one line.
    """
    wanted = bool(options.pop("backward", False))
    given = options.pop("grad_output", None)
    if not wanted and given is None:
        return None
    if "backward_pass" not in inspect.signature(module.build).parameters:
        raise InputError(f"lesson {name!r} has no backward pass yet")
    from tracer.record.blocks.backward import Backward, gradient_array

    if given is None:
        return Backward()
    try:
        return Backward(gradient_array(given))
    except InputError as e:
        raise InputError(f"the upstream gradient {e}") from None


def focus_query(module: ModuleType, tokens: int, prepared: dict[str, Any]) -> int:
    """The focus query a pipeline's ``focus`` rule picks for ``tokens`` tokens, else the default one.

    The page's tables, worked equations and figures all follow this one
    query, so the rule decides where a reader sees the lesson at work.
    """
    from tracer.record.inputs import DEFAULT_QUERY

    rule = getattr(module, "focus", None)
    if rule is None:
        return min(DEFAULT_QUERY, tokens)
    q = int(rule(tokens, prepared))
    if not 1 <= q <= tokens:
        raise InputError(f"the lesson's focus rule picked query {q}, but there are {tokens} tokens")
    return q


def data_file(package: str, stem: str, lang: str) -> dict[str, Any] | None:
    """The data file ``<stem>.<lang>.toml`` of ``package`` parsed (a narrative, a message table), or ``None``."""
    if not lang.isalpha():  # a language code, never a path
        return None
    path = resources.files(package) / f"{stem}.{lang}.toml"
    if not path.is_file():
        return None
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"the {lang!r} {stem} of {package} is not valid TOML: {e}") from None
    return data
