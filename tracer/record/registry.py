"""Every lesson attn-trace can trace, read from the entry point group ``attn_trace.lessons``.

The built-in lessons are declared in attn-trace's own ``pyproject.toml``, a
teacher's in their package's, the same way::

    [project.entry-points."attn_trace.lessons"]
    temperature = "attn_lesson_temperature:LESSON"

The entry point's name is the lesson's name; its object is a
:class:`~tracer.record.lesson.Lesson`.  The engines reach lessons only through
this module, so none of them needs to know which lessons exist.

Listing is cheap: loading an entry point imports the lesson's package, which
holds metadata and names its pipeline by module path (torch comes in when a
lesson runs).
"""

from __future__ import annotations

import inspect
import math
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import TYPE_CHECKING, TypeGuard

from tracer.errors import InputError, unknown
from tracer.message import Message
from tracer.record.lesson import Lesson, PackagedLesson

if TYPE_CHECKING:
    from tracer.core.trace import Trace

GROUP = "attn_trace.lessons"
"""The entry point group a package declares its lessons under."""


@cache
def _entries() -> dict[str, EntryPoint]:
    """Name -> entry point, by name (metadata writers sort them anyway; sorting here makes it a promise)."""
    out: dict[str, EntryPoint] = {}
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        seen = out.get(ep.name)
        if seen is not None and seen.value != ep.value:
            raise InputError(
                Message("lessons.two_installed_packages_declare", name=repr(ep.name), first=seen.value, second=ep.value)
            )
        out.setdefault(ep.name, ep)
    return out


def names() -> list[str]:
    """The names of every installed lesson, in course order: by the lesson's ``place``, then by name.

    The order is the one a newcomer reads them in (``attn-trace lessons``,
    every "choose from" list): the built-in lessons as the chapter builds
    them up, then plug-ins.  Finding a place loads the lesson's package,
    which holds metadata only (its pipeline, and torch, are imported when
    it runs); a plug-in that cannot be loaded goes last, and says why when
    it is asked for by name.
    """
    return list(_ordered())


@cache
def _ordered() -> tuple[str, ...]:
    return tuple(sorted(_entries(), key=lambda name: (_place(name), name)))


def _place(name: str) -> float:
    try:
        return float(getattr(get(name), "place", math.inf))
    except InputError:
        return math.inf


@cache
def get(name: str) -> Lesson:
    """The lesson called ``name``; an unknown name, or an entry point that is not a lesson, is one line."""
    ep = _entries().get(name)
    if ep is None:
        raise InputError(unknown("lesson", name, names()))
    try:
        lesson = ep.load()
    except KeyboardInterrupt:
        raise
    except Exception as e:  # a broken plug-in is a one-line error, not a traceback
        raise InputError(
            Message(
                "lessons.lesson_cannot_loaded", name=repr(name), target=ep.value, type=type(e).__name__, error=str(e)
            )
        ) from None
    if not _is_lesson(lesson) or lesson.name != name:
        raise InputError(Message("lessons.lesson_not_lesson_named", name=repr(name), target=ep.value))
    return lesson


def of(trace: Trace) -> Lesson | None:
    """The installed lesson that recorded ``trace``, or ``None``.

    ``None`` for a trace of code captured from torch (whatever its function
    is called), of a ``--pipeline`` (it carries its own narrative) or of a
    lesson not installed here: the engines then show it the generic way.
    """
    name = trace.meta.get("lesson")
    if trace.meta.get("captured") or "narrative" in trace.meta or name not in names():
        return None
    return get(str(name))


def _is_lesson(obj: object) -> TypeGuard[Lesson]:
    """Whether ``obj`` has every member of the :class:`Lesson` protocol, looked up without running any.

    ``isinstance(obj, Lesson)`` would call ``hasattr`` on each member, and a
    lesson's ``check`` is a property that imports its check description
    (and with it the checker): listing the lessons must not do that.
    """
    members = [n for n in vars(Lesson) if not n.startswith("_")]
    return all(inspect.getattr_static(obj, n, _MISSING) is not _MISSING for n in members)


_MISSING = object()


def all_lessons() -> list[Lesson]:
    """Every installed lesson, loaded, in :func:`names` order."""
    return [get(n) for n in names()]


def pipeline_module(name: str) -> ModuleType:
    """The pipeline module of packaged lesson ``name``.

    What the check's own per-lesson code (``tracer.compare.check``) rebuilds its
    reference with, calling the module's ``prepare`` and ``build`` at the
    sizes a student's code is built at.  It goes away when a lesson carries its
    own check description (``docs/lessons.md``).
    """
    lesson = get(name)
    if not isinstance(lesson, PackagedLesson):
        raise InputError(Message("lessons.lesson_not_packaged_lesson", name=repr(name)))
    return lesson.module


def refresh() -> None:
    """Forget what was read, so that a package installed since is seen (tests that install one call it)."""
    _entries.cache_clear()
    _ordered.cache_clear()
    get.cache_clear()
