"""Presenting a trace: view models, figures, renderers, explanations, notebooks.

The top of the flow trace -> view model -> renderer -> files. Templates live in
the top-level ``templates/`` folder, shipped as ``tracer.templates``.
"""
