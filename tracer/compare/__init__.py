"""Comparing traces: step-by-step diffs with tolerances, root causes and their reports.

Reads traces (:mod:`tracer.core`) only; never records or renders a page.
"""
