"""A teacher's own pipeline: ``module:function`` (or ``path/to/file.py:function``) -> a trace.

The function is called as ``function(inputs, tokens, query, dtype, meta)``
(a torch tensor T x d, token labels, the 1-based focus query, a torch dtype
and the metadata to pass on) and returns the :class:`~tracer.core.trace.Trace` its
:class:`~tracer.record.recorder.Recorder` made.  Its module's ``NARRATIVE``
(``{"en": {...}, "zh": {...}}``, the structure of
:func:`tracer.present.narrative.from_dict`) travels in the trace's metadata, so
reports need nothing else.  See ``docs/pipelines.md``.  It is a lesson like the
registered ones (:class:`PipelineLesson`), only not registered: named on the
command line instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracer.core.trace import Trace
from tracer.errors import InputError
from tracer.message import Message
from tracer.record import loader
from tracer.record.inputs import Example
from tracer.record.lesson import trace_with


def load(spec: str) -> tuple[Callable[..., Any], dict[str, Any], str]:
    """The function named by ``spec``, its module's ``NARRATIVE`` and the pipeline's name."""
    where, func = loader.split(spec, "spec")
    module = loader.module(where, "pipeline")
    fn = getattr(module, func, None)
    if not callable(fn):
        raise InputError(Message("lessons.pipeline_module_no_function", where=where, func=repr(func)))
    story = getattr(module, "NARRATIVE", None)
    if not isinstance(story, dict) or not story:
        raise InputError(Message("lessons.pipeline_module_no_narrative", where=where))
    return fn, story, loader.short_name(where, func)


@dataclass(frozen=True)
class PipelineLesson:
    """A teacher's pipeline function as an ad-hoc :class:`~tracer.record.lesson.Lesson`: what ``--pipeline`` runs.

    It has no options of its own and no notebook cells (its notebook re-runs
    the pipeline, :mod:`tracer.present.notebook.pipeline`); its narrative is
    its module's ``NARRATIVE`` and travels in the trace's metadata.
    """

    name: str
    spec: str
    function: Callable[..., Any]
    stories: dict[str, Any]
    options: type | None = None
    check: object | None = None

    @property
    def summary(self) -> str:
        return f"your own pipeline {self.spec}"

    def run(self, example: Example, **options: Any) -> Trace:
        if options:
            raise InputError(
                Message("lessons.pipeline_takes_no_option", spec=self.spec, options=", ".join(sorted(options)))
            )
        values, dt, meta = example.for_pipeline()
        meta.update(query=example.query, tokens=example.tokens)
        try:
            trace = self.function(values, list(example.tokens), example.query, dt, dict(meta))
        except KeyboardInterrupt:  # the person at the keyboard, not the pipeline
            raise
        except BaseException as e:  # SystemExit(0) too: a pipeline that exits has not made a trace
            raise InputError(Message("lessons.pipeline_failed", spec=self.spec, error=loader.describe(e))) from None
        if not isinstance(trace, Trace):
            raise InputError(Message("lessons.pipeline_returned_not_trace", spec=self.spec, type=type(trace).__name__))
        trace.meta.setdefault("lesson", self.name)
        trace.meta.setdefault("query", example.query)
        trace.meta.setdefault("tokens", list(example.tokens))
        trace.meta["narrative"] = self.stories
        return trace

    def trace(self, **options: Any) -> Trace:
        return trace_with(self, options)

    def narrative(self, lang: str) -> dict[str, Any] | None:
        story = self.stories.get(lang)
        return story if isinstance(story, dict) else None

    def notebook_cells(self, trace: Trace) -> dict[str, list[str]] | None:
        return None

    def messages(self, lang: str) -> dict[str, Any] | None:
        return None  # it has no check, so nothing of its own to say


def lesson(spec: str) -> PipelineLesson:
    """The pipeline ``spec`` names, as a lesson."""
    fn, story, name = load(spec)
    return PipelineLesson(name, spec, fn, story)


def run(spec: str, ex: Example) -> Trace:
    """Run the pipeline ``spec`` on a validated example."""
    return lesson(spec).run(ex)
