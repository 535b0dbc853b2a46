"""Trace -> page view model: the sections of a page, every number formatted once.

:mod:`.lesson` builds the page of any lesson from its narrative and finishes
every page (:func:`~tracer.present.views.lesson.assemble`), a lesson's own
page part included (the tutorial's walk-through, in its lesson's folder);
:mod:`.model` holds what a page is made of.  Renderers receive the
:class:`~.model.Page` and never the trace.
"""
