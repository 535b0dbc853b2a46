"""The building blocks lessons share, each built only from traced primitives.

The lessons themselves live in ``tracer/lessons/<name>/`` and are found through
:mod:`tracer.record.registry`.
"""
