"""Figures for the reports: deterministic SVG, sized to stay readable on a phone.

Heatmaps (:mod:`.heat`) and bar charts (:mod:`.bars`) are hand-written SVG
(:mod:`.marks`): a few rectangles and labels, sized in CSS pixels, drawn in
milliseconds.  Only the embedding vectors (:mod:`.vectors`, a 3-D plot) use
matplotlib, with a fixed layout; :mod:`.svg` turns that figure into clean,
self-contained SVG text.  Nothing here imports pyplot, and nothing imports
matplotlib until that figure is drawn, so ``attn-trace --help`` never pays
for it.  Every figure is drawn from numbers and labels the view model has
already prepared.
"""
