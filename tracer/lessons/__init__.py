"""The built-in lessons, one package each: ``tracer/lessons/<name>/``.

A lesson's package holds what is that lesson's alone: its pipeline (built from
the traced primitives of :mod:`tracer.record`), its narratives
(``narrative.<lang>.toml``), its notebook cells, and a
:class:`~tracer.record.lesson.PackagedLesson` named ``LESSON`` that describes
them, with its options as a dataclass.  ``pyproject.toml`` registers each
``LESSON`` under the entry point group ``attn_trace.lessons``, exactly as a
teacher's package registers its own (``docs/lessons.md``).

Lessons import the engines; the engines never import a lesson, they ask
:mod:`tracer.record.registry` for it by name.
"""
