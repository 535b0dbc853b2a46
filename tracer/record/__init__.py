"""Recording: inputs and weights in, traced primitives, the lessons' pipelines.

The layer that runs torch: it turns embeddings into a :class:`tracer.core.trace.Trace`.
It imports only :mod:`tracer.core` and :mod:`tracer.errors` from the package.
"""
