"""Figures for the reports: matplotlib's object-oriented API to deterministic SVG.

Nothing here imports pyplot, and nothing imports matplotlib until a figure is
drawn, so ``attn-trace --help`` never pays for it.  :mod:`.svg` turns a
figure into clean, self-contained SVG text; :mod:`.plots` draws the report's
figures from numbers and labels the view model has already prepared.
"""
